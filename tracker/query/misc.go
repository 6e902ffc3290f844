package query

import (
	"context"
	"errors"
	"math"
	"time"
)

// The commands that touch nothing: liveness probes and the original's test
// rig's sleep.

func (e *Env) cmdNoop(ctx context.Context, r *Request) (*Reply, error) { return nil, nil }

func (e *Env) cmdTest(ctx context.Context, r *Request) (*Reply, error) {
	if PerlTrue(r.Args.Get("crash")) {
		return nil, errors.New("crashed on purpose")
	}
	return nil, nil
}

// cmdSleep is cmd_sleep: sleep($args->{duration} || 10). A false duration
// ("", "0") is 10 s; Perl's sleep takes the integer part of any other, so
// "abc", "0.5" and negative durations return at once. As in the original
// nothing but the client bounds it, not request_timeout: a sleep holds a
// query slot and nothing else (sleep_max caps it where wanted). It ends
// early when the client hangs up or the tracker shuts down.
func (e *Env) cmdSleep(ctx context.Context, r *Request) (*Reply, error) {
	secs := int64(10)
	if arg := r.Args.Get("duration"); PerlTrue(arg) {
		secs = min(max(PerlNum(arg), 0), math.MaxInt64/int64(time.Second))
	}
	d := time.Duration(secs) * time.Second
	if e.Config.SleepMax > 0 {
		d = min(d, e.Config.SleepMax)
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-r.bulk().Done():
		return nil, r.bulk().Err()
	}
	return nil, nil
}
