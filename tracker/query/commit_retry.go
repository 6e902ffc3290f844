package query

import (
	"context"
	"errors"

	"github.com/gomogile/gomogile/store"
)

// create_close after an ambiguous commit.
//
// A commit whose acknowledgement was lost (store.ErrUnknownOutcome) may have
// applied. CommitFile is idempotent by contract, so the tracker retries it a
// few times itself; and a client that retries create_close after its first
// attempt applied, finding the tempfile gone, is answered OK when the file
// row is that exact commit's (same fid, domain and key, and length when the
// client sends one), instead of no_temp_file: otherwise it would never learn
// its upload succeeded.

// commitRetries is how many times an ambiguous CommitFile is run again.
const commitRetries = 3

// commitFile is CommitFile, retried while its outcome is unknown. A retry
// that finds the commit applied returns its result.
func (e *Env) commitFile(ctx context.Context, c store.Commit) (store.CommitResult, error) {
	res, err := e.Store.CommitFile(ctx, c)
	for i := 0; i < commitRetries && errors.Is(err, store.ErrUnknownOutcome) && ctx.Err() == nil; i++ {
		e.Log.Warn("create_close: commit outcome unknown, retrying", "fid", c.Fid, "attempt", i+1, "err", err)
		res, err = e.Store.CommitFile(ctx, c)
	}
	return res, err
}

// closedBefore reports whether fid, whose tempfile is gone, is already
// committed as key of dmid (with length size unless size is -1): the
// create_close being retried did apply.
func (e *Env) closedBefore(ctx context.Context, fid int64, dmid int, key string, size int64) (bool, error) {
	if key == "" {
		return false, nil
	}
	f, err := e.Store.File(ctx, fid)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return f.DomainID == dmid && f.Key == key && (size < 0 || f.Length == size), nil
}

// noTempFile answers a create_close whose tempfile is gone: OK when that
// exact commit applied, no_temp_file otherwise.
func (e *Env) noTempFile(ctx context.Context, r *Request, fid int64, dmid int, key string) (*Reply, error) {
	size := int64(-1)
	if PerlTrue(r.Args.Get("size")) {
		size = PerlNum(r.Args.Get("size"))
	}
	done, err := e.closedBefore(ctx, fid, dmid, key, size)
	if err != nil {
		return nil, err
	}
	if done {
		return nil, nil
	}
	return nil, perr("no_temp_file")
}
