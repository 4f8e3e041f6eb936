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
// CAP_NET_ADMIN, and as much as rmem_max allows for the others.
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
	if !hasNetAdmin(t) {
		want = min(want, procInt(t, "/proc/sys/net/core/rmem_max"))
	}
	if got < 2*want {
		t.Errorf("SO_RCVBUF is %d bytes, want at least %d", got, 2*want)
	}
}

// hasNetAdmin reports whether the process has CAP_NET_ADMIN in its effective set.
func hasNetAdmin(t *testing.T) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return caps&(1<<unix.CAP_NET_ADMIN) != 0
		}
	}
	t.Fatal("no CapEff in /proc/self/status")
	return false
}

// procInt reads a number from a file of /proc.
func procInt(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
