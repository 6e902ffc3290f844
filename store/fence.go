package store

import "context"

// Fence is what a write made under [WithFence] checks: the lock Name must
// still be at grant Token, that is no later grant of Name exists.
type Fence struct {
	Name  string
	Token int64
}

type fenceKey struct{}

// WithFence returns a ctx carrying l's fence. Every write a Store performs under that ctx
// applies only if, checked inside the write's own transaction, each fence's token is still the
// newest grant of its name; otherwise it fails with ErrFenced and changes nothing.
//
// Fences accumulate: a ctx derived from a fenced one and fenced again with
// another lock carries both; fencing again with a lock of a name already
// fenced replaces that name's token. A nil l returns ctx unchanged. Reads
// ignore fences.
func WithFence(ctx context.Context, l Lock) context.Context {
	if l == nil {
		return ctx
	}
	f := Fence{Name: l.Name(), Token: l.Token()}
	old := Fences(ctx)
	fs := make([]Fence, 0, len(old)+1)
	for _, o := range old {
		if o.Name != f.Name {
			fs = append(fs, o)
		}
	}
	fs = append(fs, f)
	return context.WithValue(ctx, fenceKey{}, fs)
}

// Fences lists the fences ctx carries, in the order they were added; nil
// when it carries none. The slice is the caller's to keep.
func Fences(ctx context.Context) []Fence {
	fs, _ := ctx.Value(fenceKey{}).([]Fence)
	if len(fs) == 0 {
		return nil
	}
	return append([]Fence(nil), fs...)
}
