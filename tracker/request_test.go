package tracker_test

import (
	"testing"
	"time"
)

// A request runs under request_timeout: sleep answers within it instead
// of holding the connection and a query slot for its whole duration.
func TestRequest_Deadline(t *testing.T) {
	cfg := testConfig()
	cfg.SleepMax = 60 * time.Second
	cfg.RequestTimeout = time.Second
	tt := startTracker(t, cfg, nil, nil)
	c := tt.dial()
	start := time.Now()
	c.want("sleep duration=30&callid=1", "OK callid=1")
	if d := time.Since(start); d > cfg.RequestTimeout+time.Second {
		t.Errorf("sleep duration=30 under request_timeout %v took %v", cfg.RequestTimeout, d)
	}
	c.want("noop", "OK ") // the connection still serves
}

// A client that hangs up cancels its request: with one query slot, the
// next client is served at once, not after the first one's 30 s sleep.
func TestRequest_CancelledWhenClientGoes(t *testing.T) {
	cfg := testConfig()
	cfg.QueryJobs = 1
	cfg.SleepMax = 60 * time.Second
	cfg.RequestTimeout = 60 * time.Second
	tt := startTracker(t, cfg, nil, nil)
	gone := tt.dial()
	gone.send("sleep duration=30\r\n")
	admin := tt.dial()
	waitFor(t, 5*time.Second, "the sleep to take the slot", func() bool {
		admin.send("!stats\r\n")
		busy := false
		for l := admin.readLine(); l != ".\r\n"; l = admin.readLine() {
			busy = busy || l == "processing_queries 1\r\n"
		}
		return busy
	})
	gone.nc.Close()
	c := tt.dial()
	start := time.Now()
	c.want("noop", "OK ")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("noop waited %v for a query slot held by a client that hung up", d)
	}
}

// A pipelined request is not taken for a hangup, and replies keep their
// order.
func TestRequest_PipelinedStillAnswered(t *testing.T) {
	cfg := testConfig()
	cfg.SleepMax = 5 * time.Second
	tt := startTracker(t, cfg, nil, nil)
	c := tt.dial()
	c.send("sleep duration=1&callid=a\r\nnoop callid=b\r\n")
	if got := c.readLine(); got != "OK callid=a\r\n" {
		t.Errorf("first: %q", got)
	}
	if got := c.readLine(); got != "OK callid=b\r\n" {
		t.Errorf("second: %q", got)
	}
	// Several requests in a row on one connection, each watched.
	for range 3 {
		c.want("noop", "OK ")
	}
	c.want("sleep duration=1", "OK ")
}
