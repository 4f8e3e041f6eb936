//go:build !unix

package reuseport

import "syscall"

// Control does nothing where there is no SO_REUSEPORT: the socket binds alone.
func Control(_, _ string, _ syscall.RawConn) error { return nil }
