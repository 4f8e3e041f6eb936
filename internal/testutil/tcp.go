package testutil

import (
	"net"
	"net/netip"
	"sync"
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

// SourceListener accepts connections on 127.0.0.1 and notes the address each came from, for
// the tests of probe_source.
type SourceListener struct {
	net.Listener
	mu   sync.Mutex
	from []netip.Addr
}

// ListenSources returns a SourceListener on a free port, closed when the test ends.
func ListenSources(t testing.TB) *SourceListener {
	t.Helper()
	s := &SourceListener{}
	s.Listener = ServeTCP(t, "127.0.0.1:0", func(c net.Conn) {
		s.mu.Lock()
		s.from = append(s.from, c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap())
		s.mu.Unlock()
	})
	return s
}

// Port returns the port the listener accepts on.
func (s *SourceListener) Port() int { return s.Addr().(*net.TCPAddr).Port }

// Reset forgets the connections so far.
func (s *SourceListener) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.from = nil
}

// Last returns the source of the newest connection, the zero Addr before the first.
func (s *SourceListener) Last() netip.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.from) == 0 {
		return netip.Addr{}
	}
	return s.from[len(s.from)-1]
}
