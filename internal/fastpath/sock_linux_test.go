package fastpath

import (
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSocketsGetTheirReceiveBuffer: a loop's socket holds rcvBuf bytes of queries (the
// kernel reports twice what it was given), beyond net.core.rmem_max for a process with
// CAP_NET_ADMIN (root here), and as much as rmem_max allows for the others.
func TestSocketsGetTheirReceiveBuffer(t *testing.T) {
	k, err := bindSock(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.close()
	got, err := unix.GetsockoptInt(k.fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	if err != nil {
		t.Fatal(err)
	}
	want := rcvBuf
	if os.Geteuid() != 0 {
		b, err := os.ReadFile("/proc/sys/net/core/rmem_max")
		if err != nil {
			t.Fatal(err)
		}
		limit, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		want = min(want, limit)
	}
	if got < 2*want {
		t.Errorf("SO_RCVBUF is %d bytes, want at least %d", got, 2*want)
	}
}
