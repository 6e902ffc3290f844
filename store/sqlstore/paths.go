package sqlstore

import (
	"context"
	"time"

	"github.com/gomogile/gomogile/store"
)

// plan is how this Store runs each operation that has a faster way on some
// databases. New decides it once (newPlan), from the Dialect's optional
// interfaces and Config.Batch; the operations call their plan's functions
// and never ask again. A fast path does exactly what the portable one does
// (paths_portable.go), in fewer round trips; the conformance suite runs both
// on MySQL and PostgreSQL (internal/testkit/portable), so they are proven
// equal.
//
//	operation        portable             fast
//	CreateTempFile   counter, INSERT      FidInserter (paths_fid.go)
//	CommitFile       one statement a turn RowChainer + Batch (paths_batch.go)
//	Add/RemoveFileOn one statement a turn RowChainer + Batch
//	Lease            one statement a turn Claimer (paths_claim.go), else Batch
//
// The one-statement paths (insertTemp, claim) leave a fenced call
// (store.WithFence) to the transactional ones: a fence is read in the
// transaction whose writes it guards.
type plan struct {
	// insertTemp inserts a tempfile row under the next fid in one round
	// trip; its args are the row's classid, dmid, dkey and devids. nil:
	// CreateTempFile takes the fid and inserts in two.
	insertTemp func(ctx context.Context, args ...any) (int64, error)
	// commit is one attempt of CommitFile with its sorted, distinct devs.
	commit func(ctx context.Context, c store.Commit, devs []int) (store.CommitResult, error)
	// changeFileOn runs change (a file_on INSERT or DELETE) under the
	// fid's locks and brings devcount along; it reports whether a row
	// changed.
	changeFileOn func(ctx context.Context, fid int64, change stmt) (bool, error)
	// claim leases in one autocommit statement (nil: no such statement);
	// lease in one transaction. read is the locking read of the due rows
	// with the database clock; now and due are its parts.
	claim func(ctx context.Context, q store.Queue, t queueTable, now, due string, lease time.Duration) ([]store.QueueItem, error)
	lease func(ctx context.Context, q store.Queue, t queueTable, read string, lease time.Duration) ([]store.QueueItem, error)
	// names says which path each operation takes (Info.Plan), for the
	// tracker's start-up log and the tests (the functions cannot be
	// compared).
	names map[string]string
}

// newPlan decides s's plan from its Dialect and Batch pool.
func (s *Store) newPlan() plan {
	p := plan{
		commit:       s.commitPortable,
		changeFileOn: s.changeFileOnPortable,
		lease:        s.leasePortable,
		names:        map[string]string{"insertTemp": "portable", "commit": "portable", "changeFileOn": "portable", "lease": "portable"},
	}
	if s.batch != nil {
		p.lease, p.names["lease"] = s.leaseBatch, "batch"
		if rc, ok := s.d.(RowChainer); ok {
			p.commit = func(ctx context.Context, c store.Commit, devs []int) (store.CommitResult, error) {
				return s.commitChained(ctx, rc, c, devs)
			}
			p.changeFileOn = func(ctx context.Context, fid int64, change stmt) (bool, error) {
				return s.changeFileOnChained(ctx, rc, fid, change)
			}
			p.names["commit"], p.names["changeFileOn"] = "chained", "chained"
		}
	}
	if c, ok := s.d.(Claimer); ok {
		p.claim = func(ctx context.Context, q store.Queue, t queueTable, now, due string, lease time.Duration) ([]store.QueueItem, error) {
			return s.leaseClaim(ctx, c, q, t, now, due, lease)
		}
		p.names["lease"] = "claim, fenced " + p.names["lease"]
	}
	if fi := s.newFidInsert(); fi.query != "" {
		p.insertTemp = func(ctx context.Context, args ...any) (int64, error) {
			return s.insertWithNextFid(ctx, fi, args...)
		}
		p.names["insertTemp"] = "fid inserter, fenced portable"
		if fi.batch {
			p.names["insertTemp"] = "batched fid inserter, fenced portable"
		}
	}
	return p
}
