package query

import (
	"context"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
)

// Rebalance is driven through server settings read by the rebalance
// worker, as in MogileFS::Rebalance: rebal_policy (the operator's policy
// string), rebal_state (the worker's saved progress), rebal_host (set while
// running) and rebal_signal ("stop").

// rebalSourceDevs are the policy's source devices now.
func (e *Env) rebalSourceDevs(ns *namespace, p cluster.RebalPolicy) []int {
	return p.SourceDevices(ns.JoinAll(e.Observe))
}

// rebalDestDevs are the policy's destinations now, minus exclude: the
// same filter the job master applies, under the same min_free_space.
func (e *Env) rebalDestDevs(ns *namespace, p cluster.RebalPolicy, exclude []int) []int {
	skip := map[int]bool{}
	for _, id := range exclude {
		skip[id] = true
	}
	return p.DestDevices(ns.JoinAll(e.Observe), e.Config.Cluster, skip)
}

func (e *Env) cmdRebalanceStatus(ctx context.Context, r *Request) (*Reply, error) {
	state, err := e.setting(ctx, "rebal_state")
	if err != nil {
		return nil, err
	}
	if !PerlTrue(state) {
		return nil, perr("no_rebal_state")
	}
	// queue_length (gomogile's own) counts the moves queued and not yet
	// done, so a client can tell when the last one has run: the worker
	// marks the run finished once it has queued everything, not moved it.
	n, err := e.Store.QueueLength(ctx, store.QueueRebalance)
	if err != nil {
		return nil, err
	}
	// nonempty_devs (gomogile's own): the run's completed source devices
	// that still hold files. A move that fails (no destination, say)
	// leaves the queue like one that worked, so this is how a client
	// emptying a device learns that it is not empty.
	var nonempty []int
	for _, id := range cluster.ParseRebalState(state).CompletedDevs {
		fids, err := e.Store.FidsOnDevice(ctx, id, 0, 1)
		if err != nil {
			return nil, err
		}
		if len(fids) > 0 {
			nonempty = append(nonempty, id)
		}
	}
	res := &Reply{}
	res.Set("state", state)
	res.Set("queue_length", n)
	res.Set("nonempty_devs", joinInts(nonempty))
	return res, nil
}

func (e *Env) cmdRebalanceStart(ctx context.Context, r *Request) (*Reply, error) {
	rebalHost, err := e.setting(ctx, "rebal_host")
	if err != nil {
		return nil, err
	}
	fsckHost, err := e.setting(ctx, "fsck_host")
	if err != nil {
		return nil, err
	}
	if PerlTrue(rebalHost) {
		return nil, perr("rebal_running", "rebalance is already running")
	}
	if PerlTrue(fsckHost) {
		return nil, perr("fsck_running", "fsck running; cannot run rebalance at same time")
	}
	state, err := e.setting(ctx, "rebal_state")
	if err != nil {
		return nil, err
	}
	if !PerlTrue(state) {
		p, err := e.rebalPolicy(ctx)
		if err != nil {
			return nil, err
		}
		ns, err := e.fresh(ctx)
		if err != nil {
			return nil, err
		}
		now, err := e.Store.Now(ctx)
		if err != nil {
			return nil, err
		}
		state = cluster.RebalState{SourceDevs: e.rebalSourceDevs(ns, p), TimeStarted: now.Unix()}.String()
		if err := e.Store.SetServerSetting(ctx, "rebal_state", state); err != nil {
			return nil, err
		}
	}
	if err := e.Store.SetServerSetting(ctx, "rebal_host", e.Host); err != nil {
		return nil, err
	}
	res := &Reply{}
	res.Set("state", state)
	return res, nil
}

// rebalPolicy reads and parses the stored rebal_policy, refusing with the
// original's error codes when it is missing or malformed.
func (e *Env) rebalPolicy(ctx context.Context) (cluster.RebalPolicy, error) {
	pol, err := e.setting(ctx, "rebal_policy")
	if err != nil {
		return cluster.RebalPolicy{}, err
	}
	if !PerlTrue(pol) {
		return cluster.RebalPolicy{}, perr("no_rebal_policy")
	}
	p, err := cluster.ParseRebalPolicy(pol)
	if err != nil {
		return p, perr("bad_rebal_pol", err.Error())
	}
	return p, nil
}

func (e *Env) cmdRebalanceTest(ctx context.Context, r *Request) (*Reply, error) {
	p, err := e.rebalPolicy(ctx)
	if err != nil {
		return nil, err
	}
	ns, err := e.fresh(ctx)
	if err != nil {
		return nil, err
	}
	sdevs := e.rebalSourceDevs(ns, p)
	res := &Reply{}
	res.Set("sdevs", joinInts(sdevs))
	res.Set("ddevs", joinInts(e.rebalDestDevs(ns, p, sdevs)))
	return res, nil
}

func (e *Env) cmdRebalanceReset(ctx context.Context, r *Request) (*Reply, error) {
	host, err := e.setting(ctx, "rebal_host")
	if err != nil {
		return nil, err
	}
	if PerlTrue(host) {
		return nil, perr("rebal_running", "rebalance is running")
	}
	return nil, e.Store.DeleteServerSetting(ctx, "rebal_state")
}

func (e *Env) cmdRebalanceStop(ctx context.Context, r *Request) (*Reply, error) {
	host, err := e.setting(ctx, "rebal_host")
	if err != nil {
		return nil, err
	}
	if !PerlTrue(host) {
		return nil, perr("rebal_not_started")
	}
	return nil, e.Store.SetServerSetting(ctx, "rebal_signal", "stop")
}

func (e *Env) cmdRebalanceSetPolicy(ctx context.Context, r *Request) (*Reply, error) {
	host, err := e.setting(ctx, "rebal_host")
	if err != nil {
		return nil, err
	}
	if PerlTrue(host) {
		return nil, perr("no_set_rebal", "cannot change rebalance policy while rebalance is running")
	}
	pol := r.Args.Get("policy")
	// The worker parses the policy with the same function, so a policy
	// accepted here is one the job master runs (fid_age=new is refused).
	if _, err := cluster.ParseRebalPolicy(pol); err != nil {
		return nil, perr("bad_rebal_pol", err.Error())
	}
	if err := e.Store.SetServerSetting(ctx, "rebal_policy", pol); err != nil {
		return nil, err
	}
	return nil, e.Store.DeleteServerSetting(ctx, "rebal_state")
}
