//go:build !unix

package mogstored

import (
	"context"
	"errors"
)

func (m *Main) daemonize(ctx context.Context, args []string) error {
	return errors.New("mogstored: --daemonize is only supported on Unix; run it under a service manager instead")
}
