package sqlstore

import (
	"context"
	"strconv"
	"time"

	"github.com/gomogile/gomogile/store"
)

// leaseClaim leases in one autocommit statement (Claimer): if its reply is
// lost, the rows it may have moved come back when the lease runs out, as a
// crashed leaser's do.
func (s *Store) leaseClaim(ctx context.Context, c Claimer, q store.Queue, t queueTable, now, due string, lease time.Duration) ([]store.QueueItem, error) {
	until := s.d.Least(now+" + ?", strconv.Itoa(endOfTime-1))
	claim := c.Claim(t.table, t.where, "SELECT fid, nexttry"+due, until, t.cols()+", nexttry")
	var out []store.QueueItem
	err := s.read(ctx, func() error {
		var err error
		out, err = s.scanItems(ctx, s.db, q, claim, secondsCeil(lease))
		return err
	})
	return out, err
}
