package torture

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// event is one line of a worker's history, as it streams it to the
// coordinator: JSON, one line per event, written with a single write as it
// happens, so that a SIGKILL loses only the operations in flight. Times are
// wall-clock Unix nanoseconds: workers and coordinator share one host, so
// their clocks are one clock.
//
// Kinds (K) and the fields each uses:
//
//	openstart   P: a Store's first attempt to open, S (= T) its time
//	opened      P, S (first attempt), T: the Store is open
//	openfail    P, S (first attempt), T, E, Msg: the process was stopped
//	            before the Store opened; the last attempt's error
//	hello   P: a Store opened; Msg: its lock mechanism
//	op      Op, S (call), T (return), D (deadline), E (error kind), Msg (first "other" errors)
//	grant   N, H (hold id), Tok, T (Lock returned)
//	end     H, Msg (released, lost, lost-at-release, release-failed), T
//	early   N, Msg: a lock timeout before the time asked
//	guard   C, H: the lock was checked before a guarded write (Lost open)
//	set     C, H, Tok, S (Get called), T (Set called): a guarded write starts
//	setdone C, H, O (outcome), V (read), W (written), T (Set returned)
//	lostpre C: the lock was lost between Get and Set; nothing written
//	bad     Msg: something the contract forbids, seen by a worker
//	created Fid, S (CreateTempFile called), T (returned)
//	ambcreate   a CreateTempFile of unknown outcome
//	abandon     Fid, O (DeleteTempFile's outcome); abandonstart before it
//	commit      Fid, S; commitdone Fid, O, Fid2 (replaced fid), T
//	gone        Fid: DeleteFile returned nil; delstart before it
//	rq          H (requeue id), Fid, Msg (what) at start; rqdone H, E at return
//	enq         Fid, S, O: an enqueue (or queueing commit) returned
//	leased      S (call), T (return), Fids, Until (NextTry nanos), H (first lease id)
//	letgo       H (lease id), T
//	finished    Fid, E, T
//
// The coordinator adds its own: kill (SIGKILL), stop (SIGSTOP), cont
// (SIGCONT), with P the process prefix.
type event struct {
	K     string  `json:"k"`
	P     string  `json:"p,omitempty"`
	T     int64   `json:"t"`
	S     int64   `json:"s,omitempty"`
	D     int64   `json:"d,omitempty"`
	Op    string  `json:"op,omitempty"`
	E     string  `json:"e,omitempty"`
	Msg   string  `json:"m,omitempty"`
	N     string  `json:"n,omitempty"`
	H     int64   `json:"h,omitempty"`
	Tok   int64   `json:"tok,omitempty"`
	Fid   int64   `json:"fid,omitempty"`
	Fid2  int64   `json:"fid2,omitempty"`
	Fids  []int64 `json:"fids,omitempty"`
	Until []int64 `json:"until,omitempty"`
	C     int     `json:"c,omitempty"`
	V     int64   `json:"v,omitempty"`
	W     int64   `json:"w,omitempty"`
	O     int     `json:"o"`
}

func nanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// emitter writes events, one line each, unbuffered: each reaches the pipe
// the moment it is written.
type emitter struct {
	mu sync.Mutex
	w  io.Writer
}

func (e *emitter) emit(ev event) {
	if ev.T == 0 {
		ev.T = time.Now().UnixNano()
	}
	b, err := json.Marshal(ev)
	if err != nil {
		panic(err) // only plain fields: cannot happen
	}
	b = append(b, '\n')
	e.mu.Lock()
	defer e.mu.Unlock()
	// A coordinator gone away is the end of the run; the worker is killed
	// shortly. Nothing to do with the error.
	_, _ = e.w.Write(b)
}
