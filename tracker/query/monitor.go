package query

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/gomogile/gomogile/store"
)

// The commands that act on the workers rather than on files or the
// namespace: clear_cache and do_monitor_round wait for the monitor,
// replicate_now hurries the replication queue.

// cmdClearCache and cmdDoMonitorRound drop the namespace caches and, as the
// original, answer only after a full monitor round that started after the
// request, so that every worker has seen the change (class hash type,
// device state) by the time the client hears OK. The wait is bounded by the
// request's deadline (request_timeout).
func (e *Env) cmdClearCache(ctx context.Context, r *Request) (*Reply, error) {
	if err := e.monitorRound(ctx); err != nil {
		return nil, err
	}
	// The original's clear_cache answers with the request's own arguments
	// (create_domain's reply is built the same way).
	res := &Reply{}
	for _, k := range slices.Sorted(maps.Keys(r.Args)) {
		if k != "callid" { // the server adds it back (okLine)
			res.Set(k, r.Args[k])
		}
	}
	return res, nil
}

func (e *Env) cmdDoMonitorRound(ctx context.Context, r *Request) (*Reply, error) {
	return nil, e.monitorRound(ctx)
}

func (e *Env) monitorRound(ctx context.Context) error {
	e.NS.Invalidate()
	if !e.JobsRunning() {
		return nil
	}
	return e.Jobs.MonitorRound(ctx)
}

func (e *Env) cmdReplicateNow(ctx context.Context, r *Request) (*Reply, error) {
	n, err := e.Store.Expedite(ctx, store.QueueReplicate)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	res.Set("count", n)
	return res, nil
}

// waitForMonitor waits (at most monitorWait) until the monitor has observed
// at least one device, when a jobs manager runs and devices exist.
func (e *Env) waitForMonitor(ctx context.Context, ns *namespace) {
	if !e.JobsRunning() || len(ns.Devices) == 0 {
		return
	}
	deadline := time.Now().Add(monitorWait)
	for {
		for _, d := range ns.Devices {
			if e.Jobs.Observe(d.ID).State != "" {
				return
			}
		}
		if time.Now().After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// monitorWait bounds waitForMonitor; the original's monitor runs every few
// seconds.
const monitorWait = 5 * time.Second
