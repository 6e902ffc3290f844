package storerpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/gomogile/gomogile/store"
)

// storeType is the contract: the methods a worker may call.
var storeType = reflect.TypeOf((*store.Backend)(nil)).Elem()

// lockGrant is Lock's result on the wire: the handle the serving end keeps,
// and what the holder's Lock reports.
type lockGrant struct {
	H     uint64 `json:"h"`
	Name  string `json:"name"`
	Token int64  `json:"token"`
}

// fenceOf carries a fence that came over the wire into store.WithFence,
// which takes a Lock; only Name and Token are read.
type fenceOf struct{ f store.Fence }

func (f fenceOf) Name() string                  { return f.f.Name }
func (f fenceOf) Token() int64                  { return f.f.Token }
func (f fenceOf) Lost() <-chan struct{}         { return nil }
func (f fenceOf) Release(context.Context) error { return nil }

// startCall runs one call from the other end on a goroutine of its own, so
// that a slow call (a lock wait) holds up nothing else.
func (c *Conn) startCall(f frame) {
	ctx, cancel := context.WithCancel(context.Background())
	if f.DL != 0 {
		ctx, cancel = context.WithDeadline(ctx, time.Unix(0, f.DL))
	}
	for _, fe := range f.F {
		ctx = store.WithFence(ctx, fenceOf{fe})
	}
	c.mu.Lock()
	select {
	case <-c.done:
		// The other end is gone: run nothing more for it.
		c.mu.Unlock()
		cancel()
		return
	default:
	}
	c.calls[f.ID] = cancel
	c.inflight.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.inflight.Done()
		defer cancel()
		res, err := c.invoke(ctx, f.M, f.A)
		c.mu.Lock()
		delete(c.calls, f.ID)
		c.mu.Unlock()
		ret := frame{T: "ret", ID: f.ID, A: res}
		if err != nil {
			ret.A, ret.E = nil, encodeErr(err)
		}
		_ = c.send(ret)
	}()
}

// invoke calls method on the served Store with args decoded into its
// parameter types. Only the contract's methods (store.Backend) can be called;
// Close and Capabilities are the serving end's own business.
func (c *Conn) invoke(ctx context.Context, method string, args []json.RawMessage) ([]json.RawMessage, error) {
	if c.st == nil {
		return nil, fmt.Errorf("storerpc: %s: this end serves no store: %w", method, store.ErrInvalid)
	}
	switch method {
	case "Lock":
		return c.lock(ctx, args)
	case "Lock.Release":
		return nil, c.release(ctx, args)
	case "Close", "Capabilities":
		return nil, fmt.Errorf("storerpc: %s: not callable over the connection: %w", method, store.ErrInvalid)
	}
	m, ok := storeType.MethodByName(method)
	if !ok {
		return nil, fmt.Errorf("storerpc: %q: no such Store method: %w", method, store.ErrInvalid)
	}
	mt := m.Type
	if mt.NumIn() != len(args)+1 {
		return nil, fmt.Errorf("storerpc: %s: %d arguments, want %d: %w", method, len(args), mt.NumIn()-1, store.ErrInvalid)
	}
	in := []reflect.Value{reflect.ValueOf(ctx)}
	for i, a := range args {
		v := reflect.New(mt.In(i + 1))
		if err := json.Unmarshal(a, v.Interface()); err != nil {
			return nil, fmt.Errorf("storerpc: %s: argument %d: %v: %w", method, i+1, err, store.ErrInvalid)
		}
		in = append(in, v.Elem())
	}
	fn := reflect.ValueOf(c.st).MethodByName(method)
	var out []reflect.Value
	if mt.IsVariadic() {
		out = fn.CallSlice(in)
	} else {
		out = fn.Call(in)
	}
	if err, _ := out[len(out)-1].Interface().(error); err != nil {
		return nil, err
	}
	res := make([]json.RawMessage, 0, len(out)-1)
	for _, v := range out[:len(out)-1] {
		b, err := json.Marshal(v.Interface())
		if err != nil {
			return nil, fmt.Errorf("storerpc: %s: result: %w", method, err)
		}
		res = append(res, b)
	}
	return res, nil
}

func (c *Conn) lock(ctx context.Context, args []json.RawMessage) ([]json.RawMessage, error) {
	var name string
	var timeout time.Duration
	if len(args) != 2 || json.Unmarshal(args[0], &name) != nil || json.Unmarshal(args[1], &timeout) != nil {
		return nil, fmt.Errorf("storerpc: Lock: bad arguments: %w", store.ErrInvalid)
	}
	l, err := c.st.Lock(ctx, name, timeout)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	select {
	case <-c.done:
		// The holder went away while it waited: nobody may believe it
		// holds this grant, so give it back.
		c.mu.Unlock()
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = l.Release(rctx)
		return nil, fmt.Errorf("storerpc: Lock %s: %w", name, c.err)
	default:
	}
	c.nextID++
	h := c.nextID
	sl := &servedLock{l: l, released: make(chan struct{})}
	c.held[h] = sl
	c.mu.Unlock()
	go func() {
		select {
		case <-l.Lost():
			_ = c.send(frame{T: "lost", ID: h})
		case <-sl.released:
		case <-c.done:
		}
	}()
	b, _ := json.Marshal(lockGrant{H: h, Name: l.Name(), Token: l.Token()})
	return []json.RawMessage{b}, nil
}

func (c *Conn) release(ctx context.Context, args []json.RawMessage) error {
	var h uint64
	if len(args) != 1 || json.Unmarshal(args[0], &h) != nil {
		return fmt.Errorf("storerpc: Lock.Release: bad arguments: %w", store.ErrInvalid)
	}
	c.mu.Lock()
	sl := c.held[h]
	c.mu.Unlock()
	if sl == nil {
		return nil // released before (a second Release returns nil)
	}
	err := sl.l.Release(ctx)
	if err != nil && !errors.Is(err, store.ErrLockLost) {
		return err // still held: the holder may try again
	}
	// Released, or lost (Release changes nothing then): either way it is
	// no longer ours to keep.
	c.mu.Lock()
	if c.held[h] == sl {
		delete(c.held, h)
		close(sl.released)
	}
	c.mu.Unlock()
	return err
}

// servedLock is a lock held for the other end; released ends the goroutine
// that watches its Lost (which Release does not close).
type servedLock struct {
	l        store.Lock
	released chan struct{}
}
