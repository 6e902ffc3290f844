package query

import (
	"context"
	"net"
	"strconv"
	"strings"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
)

// namespace is the cluster model's snapshot of domains, classes, hosts and
// devices, read through the cache the tracker shares with its workers
// (namespace_cache_ttl).
type namespace = cluster.Snapshot

func (e *Env) namespace(ctx context.Context) (*namespace, error) {
	return e.NS.Get(ctx)
}

// fresh reloads the namespace now: admin commands act on the database as
// it is, not on a cached view.
func (e *Env) fresh(ctx context.Context) (*namespace, error) {
	e.NS.Invalidate()
	return e.NS.Get(ctx)
}

// checkDomain is Worker::Query::check_domain. A name missing from the cache
// triggers one reload: another tracker may have just created it.
func (e *Env) checkDomain(ctx context.Context, r *Request) (*namespace, store.Domain, error) {
	name := r.Args.Get("domain")
	if name == "" {
		return nil, store.Domain{}, perr("no_domain")
	}
	ns, err := e.namespace(ctx)
	if err != nil {
		return nil, store.Domain{}, err
	}
	d, ok := ns.DomainByName[name]
	if !ok {
		if ns, err = e.fresh(ctx); err != nil {
			return nil, store.Domain{}, err
		}
		if d, ok = ns.DomainByName[name]; !ok {
			return nil, store.Domain{}, perr("unreg_domain")
		}
	}
	return ns, d, nil
}

// checkDomainKey is checkDomain for the commands that also need a key,
// refused with no_key when empty, as Query.pm checks them in that order.
func (e *Env) checkDomainKey(ctx context.Context, r *Request) (*namespace, store.Domain, string, error) {
	ns, dom, err := e.checkDomain(ctx, r)
	if err != nil {
		return nil, dom, "", err
	}
	key := r.Args.Get("key")
	if key == "" {
		return nil, dom, "", perr("no_key")
	}
	return ns, dom, key, nil
}

// lookupClass finds a class by name; a miss reloads the namespace once,
// since another tracker may have just created the class. It returns the
// namespace it answered from.
func (e *Env) lookupClass(ctx context.Context, ns *namespace, dmid int, name string) (*store.Class, *namespace, error) {
	if c, ok := ns.ClassByName(dmid, name, e.Config.Cluster); ok {
		return &c, ns, nil
	}
	ns, err := e.fresh(ctx)
	if err != nil {
		return nil, nil, err
	}
	if c, ok := ns.ClassByName(dmid, name, e.Config.Cluster); ok {
		return &c, ns, nil
	}
	return nil, ns, nil
}

// classFor returns a class, the implicit default class getting
// default_mindevcount as in Factory::Domain.
func (e *Env) classFor(ns *namespace, dmid, classid int) (store.Class, bool) {
	return ns.Class(dmid, classid, e.Config.Cluster)
}

// device joins d with its host and observation for the cluster model's
// predicates; ok is false when its host is unknown.
func (e *Env) device(ns *namespace, d store.Device) (cluster.Device, bool) {
	return ns.Join(d, e.Observe(d.ID))
}

// hostIP is Host::ip: the alternate IP for clients inside altmask, or
// when the client asked for zone=alt.
func hostIP(h store.Host, r *Request) string {
	if h.AltIP != "" && h.AltMask != "" {
		if r.AltZone {
			return h.AltIP
		}
		if _, n, err := net.ParseCIDR(h.AltMask); err == nil {
			if ip := net.ParseIP(r.ClientIP); ip != nil && n.Contains(ip) {
				return h.AltIP
			}
		}
	}
	return h.IP
}

func hostBase(h store.Host, r *Request, getPort bool) string {
	return cluster.HostURL(h, hostIP(h, r), getPort)
}

// devURL is DevFID::url (put port) or get_url (get port); ok is false when
// the device or its host is unknown.
func devURL(ns *namespace, devid int, fid int64, r *Request, getPort bool) (string, bool) {
	d, ok := ns.DevByID[devid]
	if !ok {
		return "", false
	}
	h, ok := ns.HostByID[d.HostID]
	if !ok {
		return "", false
	}
	return hostBase(h, r, getPort) + cluster.FidPath(devid, fid), true
}

// shouldReadFrom is the cluster model's Device.ShouldReadFrom.
func (e *Env) shouldReadFrom(ns *namespace, d store.Device) bool {
	dv, ok := e.device(ns, d)
	return ok && dv.ShouldReadFrom()
}

type weighted struct {
	dev    store.Device
	weight float64
}

// readWeight is sort_devs_by_utilization's weight for reading from d: less
// busy devices first when the monitor reports a whole-number utilization
// (the original ignores fractional figures the same way), else the device's
// weight; never 0. o is the monitor's observation of d (none without a
// running monitor).
func readWeight(d store.Device, o cluster.Observation) float64 {
	w := d.Weight
	if util := o.Utilization; o.UtilizationOK && util != "" && strings.Trim(util, "0123456789") == "" {
		if u, err := strconv.Atoi(util); err == nil {
			w = 102 - u
		}
	}
	if w == 0 {
		w = 100
	}
	return float64(w)
}

// weightedList puts devices in cluster.WeightedOrder by their weights.
func weightedList(in []weighted) []store.Device {
	out := make([]store.Device, 0, len(in))
	for _, w := range cluster.WeightedOrder(in, func(w weighted) float64 { return w.weight }) {
		out = append(out, w.dev)
	}
	return out
}
