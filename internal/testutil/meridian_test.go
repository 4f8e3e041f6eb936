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
