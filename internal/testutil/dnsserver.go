package testutil

import (
	"net"
	"strconv"
	"testing"

	"github.com/miekg/dns"
)

// StartDNS serves handler with github.com/miekg/dns servers over UDP and TCP on one free
// loopback port and returns their host:port once both are listening. tsig holds the TSIG
// secrets (key name -> base64 secret) the servers verify queries with; nil: none. The
// servers stop when the test ends.
func StartDNS(t testing.TB, handler dns.Handler, tsig map[string]string) string {
	t.Helper()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
	for _, network := range []string{"udp", "tcp"} {
		started := make(chan struct{})
		failed := make(chan error, 1)
		srv := &dns.Server{Addr: addr, Net: network, Handler: handler, TsigSecret: tsig,
			NotifyStartedFunc: func() { close(started) }}
		go func() { failed <- srv.ListenAndServe() }()
		select {
		case <-started:
		case err := <-failed:
			t.Fatalf("dns server on %s %s: %v", network, addr, err)
		}
		t.Cleanup(func() { _ = srv.Shutdown() })
	}
	return addr
}

// ServeUDP listens on addr (host:port on loopback; port 0 for a free one) and answers every
// packet it reads with what reply returns for it, nothing when that is nil: a raw responder
// for answers a real server would not give. The socket is closed when the test ends.
func ServeUDP(t testing.TB, addr string, reply func(packet []byte) []byte) net.PacketConn {
	t.Helper()
	return ServeUDPFrom(t, addr, func(packet []byte, _ net.Addr) [][]byte {
		if out := reply(packet); out != nil {
			return [][]byte{out}
		}
		return nil
	})
}

// ServeUDPFrom is ServeUDP for responders that need to know who asked, or answer with several
// datagrams (sent in order): reply gets each packet and its sender.
func ServeUDPFrom(t testing.TB, addr string, reply func(packet []byte, from net.Addr) [][]byte) net.PacketConn {
	t.Helper()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, dns.MaxMsgSize)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			for _, out := range reply(buf[:n], from) {
				_, _ = pc.WriteTo(out, from)
			}
		}
	}()
	return pc
}
