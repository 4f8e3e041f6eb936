//go:build !linux

package fastpath

import (
	"errors"
	"net"
)

// Listen fails: the fast path's batched system calls and socket steering are Linux's.
func Listen(addr string, loops, others int, steer bool, h Handler, counts *Counts) (*Server, error) {
	return nil, errors.New("fastpath: needs Linux")
}

// newLoop is never called off Linux: Listen fails first.
func newLoop(*Server, *net.UDPConn) (interface{ run() }, error) {
	return nil, errors.New("fastpath: needs Linux")
}

// steerAway does nothing off Linux: no server runs there.
func steerAway(*Server) {}

// drain does nothing off Linux.
func drain([]*net.UDPConn) {}

// resteer does nothing off Linux.
func resteer(string) {}
