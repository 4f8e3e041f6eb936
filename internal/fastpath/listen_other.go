//go:build !linux

package fastpath

import "errors"

// Listen fails: the fast path's batched system calls and socket steering are Linux's.
func Listen(addr string, c Config, h Handler) (*Server, error) {
	return nil, errors.New("fastpath: needs Linux")
}

// sock is never made off Linux: Listen fails first.
type sock struct{}

// newLoop is never called off Linux: Listen fails first.
func newLoop(*Server, *sock) interface{ run() } { return nil }

// wake is never called off Linux.
func (*sock) wake() {}

// close is never called off Linux.
func (*sock) close() error { return nil }

// steerAway does nothing off Linux: no server runs there.
func steerAway(*Server) {}

// drain does nothing off Linux.
func drain([]*sock, []*sock) {}

// tcpLoop is never made off Linux: Listen fails first.
type tcpLoop struct{}

// newTCPLoop is never called off Linux.
func newTCPLoop(*Server, *sock) (*tcpLoop, error) { return nil, errors.New("fastpath: needs Linux") }

// run is never called off Linux.
func (*tcpLoop) run() {}

// wake is never called off Linux.
func (*tcpLoop) wake() {}

// resteer does nothing off Linux.
func resteer(string) {}
