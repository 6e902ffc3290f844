package jobs

import "time"

// obsSnapshot is the monitor's observations as they cross from the monitor
// process to the tracker and on to the other workers, as 2.73's monitor
// child told its parent, which told every other child.
type obsSnapshot struct {
	Dev    map[int]devObsWire `json:"dev"`
	HostOK map[int]bool       `json:"host_ok"`
	Util   map[int]string     `json:"util"`
	// Passed: the monitor has completed a pass (the workers wait for one).
	Passed bool `json:"passed"`
}

type devObsWire struct {
	State                         string
	TotalKB, UsedKB               int64
	LastTestWrite                 time.Time
	HostID                        int
	MD5Known, RejectMD5, MD5Stale bool
}

func (o *observations) snapshot() obsSnapshot {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := obsSnapshot{Dev: map[int]devObsWire{}, HostOK: map[int]bool{}, Util: map[int]string{}}
	for id, d := range o.dev {
		s.Dev[id] = devObsWire{
			State: d.state, TotalKB: d.totalKB, UsedKB: d.usedKB, LastTestWrite: d.lastTestWrite,
			HostID: d.hostID, MD5Known: d.md5Known, RejectMD5: d.rejectMD5, MD5Stale: d.md5Stale,
		}
	}
	for id, ok := range o.hostOK {
		s.HostOK[id] = ok
	}
	for id, u := range o.util {
		s.Util[id] = u.text
	}
	select {
	case <-o.firstPass:
		s.Passed = true
	default:
	}
	return s
}

// load replaces the observations with s.
func (o *observations) load(s obsSnapshot) {
	o.mu.Lock()
	o.dev = make(map[int]devObs, len(s.Dev))
	for id, d := range s.Dev {
		o.dev[id] = devObs{
			state: d.State, totalKB: d.TotalKB, usedKB: d.UsedKB, lastTestWrite: d.LastTestWrite,
			hostID: d.HostID, md5Known: d.MD5Known, rejectMD5: d.RejectMD5, md5Stale: d.MD5Stale,
		}
	}
	o.hostOK = make(map[int]bool, len(s.HostOK))
	for id, ok := range s.HostOK {
		o.hostOK[id] = ok
	}
	o.util = make(map[int]devUtil, len(s.Util))
	for id, text := range s.Util {
		o.util[id] = devUtil{text: text}
	}
	o.mu.Unlock()
	if s.Passed {
		o.once.Do(func() { close(o.firstPass) })
	}
}
