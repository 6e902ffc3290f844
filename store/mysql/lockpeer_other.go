//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package mysql

import (
	"net"
	"time"
)

// peerWatch is unavailable here: watchers rely on pings alone.
type peerWatch struct{}

type peerEvent int

const (
	peerQuiet peerEvent = iota
	peerData
	peerClosed
)

func newPeerWatch(net.Conn) *peerWatch { return nil }

func (*peerWatch) wait(time.Duration, <-chan struct{}) peerEvent { return peerQuiet }
func (*peerWatch) interrupt()                                    {}
func (*peerWatch) close()                                        {}
