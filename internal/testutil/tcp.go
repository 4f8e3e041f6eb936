package testutil

import (
	"net"
	"testing"
)

// ServeTCP listens on addr (host:port on loopback; port 0 for a free one) and calls handle on
// a goroutine of its own for every connection, closing the connection when handle returns.
// The listener is closed when the test ends; closing it earlier stops accepting.
func ServeTCP(t testing.TB, addr string, handle func(net.Conn)) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return l
}
