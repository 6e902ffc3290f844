package torture

import (
	"context"

	"github.com/gomogile/gomogile/store"
)

// tokenOf is the lock's fencing token.
func tokenOf(l store.Lock) int64 { return l.Token() }

// fenced makes the writes of ctx conditional on l still being the latest
// grant of its name (store.ErrFenced otherwise).
func fenced(ctx context.Context, l store.Lock) context.Context {
	return store.WithFence(ctx, l)
}
