package storerpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/gomogile/gomogile/store"
)

// frame is one line on the wire.
type frame struct {
	T  string            `json:"t"`            // call, ret, cancel, lost, msg
	ID uint64            `json:"id,omitempty"` // call and its ret/cancel; lock handle for lost
	M  string            `json:"m,omitempty"`  // method (call) or message kind (msg)
	A  []json.RawMessage `json:"a,omitempty"`  // arguments (call) or results (ret)
	DL int64             `json:"dl,omitempty"` // the caller's deadline, Unix ns; 0: none
	F  []store.Fence     `json:"f,omitempty"`  // the fences the caller's context carries
	E  *wireErr          `json:"e,omitempty"`
	B  json.RawMessage   `json:"b,omitempty"` // msg body
}

// Conn is one end of the connection: it serves its Store (if any) to the
// other end, calls the other end's (Store), and carries messages both ways.
type Conn struct {
	rw    io.ReadWriteCloser
	st    *store.Store
	onMsg func(kind string, body json.RawMessage)

	wmu  sync.Mutex
	wq   []frame
	wsig chan struct{}

	done     chan struct{}
	doneOnce sync.Once
	err      error // why it ended, set before done closes

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan frame  // our calls awaiting their ret
	locks   map[uint64]*remoteLock // locks the other end holds for us
	calls   map[uint64]context.CancelFunc
	held    map[uint64]*servedLock // locks we hold for the other end
	served  sync.WaitGroup
	// inflight counts the calls we are running for the other end: its
	// locks are released only after they have returned, so that no call
	// of a holder that is gone runs once its locks are free.
	inflight sync.WaitGroup
}

// New starts a Conn over rw. st, when not nil, is served to the other end;
// onMsg, when not nil, gets every message the other end sends, in order,
// on the reading goroutine (it must not block for long). The Conn ends when
// rw fails or closes, or on Close.
func New(rw io.ReadWriteCloser, st *store.Store, onMsg func(kind string, body json.RawMessage)) *Conn {
	c := &Conn{
		rw: rw, st: st, onMsg: onMsg,
		wsig:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		pending: map[uint64]chan frame{},
		locks:   map[uint64]*remoteLock{},
		calls:   map[uint64]context.CancelFunc{},
		held:    map[uint64]*servedLock{},
	}
	go c.writeLoop()
	go c.readLoop()
	return c
}

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended (io.EOF: the other end closed it); nil
// while it runs.
func (c *Conn) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// Close ends the connection. Locks served to the other end are released
// (Wait waits for that); our calls in flight fail.
func (c *Conn) Close() error {
	c.end(errClosed)
	return nil
}

// Wait blocks until the connection has ended and every lock it held for
// the other end is released.
func (c *Conn) Wait() {
	<-c.done
	c.served.Wait()
}

var errClosed = errors.New("storerpc: connection closed")

func (c *Conn) end(err error) {
	c.doneOnce.Do(func() {
		c.err = err
		close(c.done)
		c.rw.Close()
		c.mu.Lock()
		for _, cancel := range c.calls {
			cancel()
		}
		held := c.held
		c.held = map[uint64]*servedLock{}
		for _, l := range c.locks {
			l.markLost()
		}
		c.mu.Unlock()
		// The other end is gone (its process exited or closed us): its
		// locks go, as a dead database session's do.
		c.served.Add(1)
		go func() {
			defer c.served.Done()
			c.inflight.Wait() // cancelled above, so they end promptly
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for _, sl := range held {
				_ = sl.l.Release(ctx)
			}
		}()
	})
}

// Send queues a message for the other end; it never blocks. After the
// connection has ended it returns the reason and sends nothing.
func (c *Conn) Send(kind string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("storerpc: send %s: %w", kind, err)
	}
	return c.send(frame{T: "msg", M: kind, B: b})
}

func (c *Conn) send(f frame) error {
	select {
	case <-c.done:
		return c.err
	default:
	}
	c.wmu.Lock()
	c.wq = append(c.wq, f)
	c.wmu.Unlock()
	select {
	case c.wsig <- struct{}{}:
	default:
	}
	return nil
}

func (c *Conn) writeLoop() {
	bw := bufio.NewWriter(c.rw)
	enc := json.NewEncoder(bw)
	for {
		select {
		case <-c.done:
			return
		case <-c.wsig:
		}
		c.wmu.Lock()
		q := c.wq
		c.wq = nil
		c.wmu.Unlock()
		for _, f := range q {
			if err := enc.Encode(f); err != nil {
				c.end(fmt.Errorf("storerpc: write: %w", err))
				return
			}
		}
		if err := bw.Flush(); err != nil {
			c.end(fmt.Errorf("storerpc: write: %w", err))
			return
		}
	}
}

func (c *Conn) readLoop() {
	dec := json.NewDecoder(bufio.NewReader(c.rw))
	for {
		var f frame
		if err := dec.Decode(&f); err != nil {
			if !errors.Is(err, io.EOF) {
				err = fmt.Errorf("storerpc: read: %w", err)
			}
			c.end(err)
			return
		}
		switch f.T {
		case "call":
			c.startCall(f)
		case "cancel":
			c.mu.Lock()
			cancel := c.calls[f.ID]
			c.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		case "ret":
			c.mu.Lock()
			ch := c.pending[f.ID]
			delete(c.pending, f.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- f
			}
		case "lost":
			c.mu.Lock()
			l := c.locks[f.ID]
			c.mu.Unlock()
			if l != nil {
				l.markLost()
			}
		case "msg":
			if c.onMsg != nil {
				c.onMsg(f.M, f.B)
			}
		default:
			c.end(fmt.Errorf("storerpc: read: unknown frame type %q", f.T))
			return
		}
	}
}
