//go:build unix

package reuseport

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// Control sets SO_REUSEPORT on a socket before it binds: a net.ListenConfig's Control.
func Control(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	})
	return errors.Join(err, serr)
}
