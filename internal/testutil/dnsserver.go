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
	// The sockets are bound here and handed to the servers, so no other process can take the
	// port between choosing it and listening on it.
	pc, l := listenUDPAndTCP(t)
	for _, srv := range []*dns.Server{
		{PacketConn: pc, Net: "udp", Handler: handler, TsigSecret: tsig},
		{Listener: l, Net: "tcp", Handler: handler, TsigSecret: tsig},
	} {
		started := make(chan struct{})
		failed := make(chan error, 1)
		srv.NotifyStartedFunc = func() { close(started) }
		go func() { failed <- srv.ActivateAndServe() }()
		select {
		case <-started:
		case err := <-failed:
			t.Fatalf("dns server on %s %s: %v", srv.Net, l.Addr(), err)
		}
		t.Cleanup(func() { _ = srv.Shutdown() })
	}
	return l.Addr().String()
}

// listenUDPAndTCP binds a UDP socket and a TCP listener on one free loopback port.
func listenUDPAndTCP(t testing.TB) (net.PacketConn, net.Listener) {
	t.Helper()
	for range 50 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port)))
		if err == nil {
			return pc, l
		}
		pc.Close()
	}
	t.Fatal("no loopback port free for both UDP and TCP")
	return nil, nil
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
