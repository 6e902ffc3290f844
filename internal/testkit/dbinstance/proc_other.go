//go:build !unix

package dbinstance

import (
	"errors"
	"fmt"
	"os/exec"
	"time"
)

// Private servers need Unix process groups and signals.
var errPlatform = fmt.Errorf("%w: private servers need a Unix system", ErrUnavailable)

type signal int

const (
	sigFast signal = iota
	sigTerm
)

type proc struct {
	exited chan struct{}
	err    error
}

func setAccount(*exec.Cmd, *account, bool) {}

func startProc(*account, string, string, ...string) (*proc, error) { return nil, errPlatform }

func (p *proc) running() bool                    { return false }
func (p *proc) pid() int                         { return 0 }
func (p *proc) kill() error                      { return errors.ErrUnsupported }
func (p *proc) stop(signal, time.Duration) error { return errors.ErrUnsupported }

func alive(int) bool { return false }
