package testutil

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePortsAreDistinctAndFree: the ports are all different, and each can be bound for TCP
// and UDP once FreePorts returned.
func TestFreePortsAreDistinctAndFree(t *testing.T) {
	ports := FreePorts(t, 20)
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d returned twice: %v", p, ports)
		}
		seen[p] = true
		addr := "127.0.0.1:" + strconv.Itoa(p)
		tl, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("tcp %s: %v", addr, err)
		}
		ul, err := net.ListenPacket("udp", addr)
		if err != nil {
			t.Fatalf("udp %s: %v", addr, err)
		}
		tl.Close()
		ul.Close()
	}
}

// TestFreePortNeverRepeats: FreePort closes the port it returns, and the kernel offers a
// closed port again, but no call in the process returns a port that one before it (of FreePort
// or FreePorts) returned.
func TestFreePortNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for _, p := range FreePorts(t, 3) {
		seen[p] = true
	}
	for range 200 {
		p := FreePort(t)
		if seen[p] {
			t.Fatalf("port %d returned twice", p)
		}
		seen[p] = true
	}
}

// TestWithFastPath adds the fastpath option to every gslb block, giving the short form a block,
// and leaves alone gslb_proxy and a Corefile with a plugin the fast path refuses or the log
// plugin.
func TestWithFastPath(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{".:53 {\n bind 127.0.0.1\n gslb {\n  zone example.org. a.yml\n }\n}\n", ".:53 {\n bind 127.0.0.1\n gslb {\n   fastpath\n  zone example.org. a.yml\n }\n}\n"},
		{"example.org {\n  gslb a.yml\n}\n", "example.org {\n  gslb a.yml {\n    fastpath\n  }\n}\n"},
		{"example.org {\n  gslb_proxy a.yml\n}\n", "example.org {\n  gslb_proxy a.yml\n}\n"},
		{"example.org {\n  acl\n  gslb a.yml\n}\n", "example.org {\n  acl\n  gslb a.yml\n}\n"},
		{"example.org {\n  gslb a.yml\n  log\n}\n", "example.org {\n  gslb a.yml\n  log\n}\n"},
	} {
		if got := WithFastPath(tt.in); got != tt.want {
			t.Errorf("WithFastPath(%q)\n = %q\nwant %q", tt.in, got, tt.want)
		}
	}
}
