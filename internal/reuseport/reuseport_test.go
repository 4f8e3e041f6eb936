package reuseport

import (
	"net"
	"testing"
)

// TestTwoListenersShareAnAddress: a second Listen on the address of a first succeeds, where
// net.Listen fails.
func TestTwoListenersShareAnAddress(t *testing.T) {
	first, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	addr := first.Addr().String()
	if l, err := net.Listen("tcp", addr); err == nil {
		l.Close()
		t.Fatal("net.Listen bound the address too: the test shows nothing")
	}
	second, err := Listen("tcp", addr)
	if err != nil {
		t.Fatalf("a second listener on %s: %v", addr, err)
	}
	second.Close()
}
