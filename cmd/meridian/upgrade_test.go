package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// upgradeZone is failover over three backends: 127.0.0.1, whose check is refused (down), then
// 127.0.0.2, up but disabled by an override, then 127.0.0.3, up. The right answer is 127.0.0.3
// alone; a process that lost the health state (127.0.0.1 unknown) or the override answers
// otherwise.
func upgradeZone(down, disabled, up int) string {
	backend := func(addr string, priority, port int) string {
		return fmt.Sprintf(`      - address: %s
        priority: %d
        rise: 1
        fall: 1
        healthchecks: [{type: tcp, params: {port: %d}}]
`, addr, priority, port)
	}
	return "records:\n  www.example.org.:\n    mode: failover\n    scrape_interval: 200ms\n    scrape_timeout: 100ms\n    backends:\n" +
		backend("127.0.0.1", 1, down) + backend("127.0.0.2", 2, disabled) + backend("127.0.0.3", 3, up)
}

// TestBinaryUpgradeLosesNoQuery replaces the running binary several times (a new file at its
// path, then SIGUSR2) under a steady load of UDP queries, with and without the fast path. Every
// query is answered, every answer is the right one (the health state and the override carry
// over; the state file is written only on the way out, after an hour, and when SIGUSR2 comes),
// each upgrade leaves one new process (its PID in the pidfile, told to systemd's
// notification socket as MAINPID), and the admin API answers throughout.
func TestBinaryUpgradeLosesNoQuery(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		fast bool
	}{
		{"CoreDNS's sockets", false},
		{"fast path", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			testBinaryUpgrade(t, tt.fast, 5)
		})
	}
}

// testBinaryUpgrade is TestBinaryUpgradeLosesNoQuery with upgrades upgrades, with the fast
// path or without.
func testBinaryUpgrade(t *testing.T, fast bool, upgrades int) {
	options := "  " + testutil.NoFastPath + "\n"
	if fast {
		options = "  fastpath 2\n"
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "meridian")
	// One copy of the binary for the start and each upgrade, written (and closed) before any
	// runs: a file that is open for writing cannot be executed, and a process that this test
	// process forks meanwhile (the parallel tests start many) holds the test's open files
	// until it executes its own program.
	data, err := os.ReadFile(testutil.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	for i := range upgrades + 1 {
		if err := os.WriteFile(fmt.Sprintf("%s.%d", bin, i), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	installed := 0
	install := func() {
		// As a package manager does: a new file renamed over the old one.
		if err := os.Rename(fmt.Sprintf("%s.%d", bin, installed), bin); err != nil {
			t.Fatal(err)
		}
		installed++
	}
	install()
	down, disabled, up := startSite(t, "127.0.0.1"), startSite(t, "127.0.0.2"), startSite(t, "127.0.0.3")
	down.fail()
	if err := os.WriteFile(filepath.Join(dir, "zone.yml"), []byte(upgradeZone(down.port(), disabled.port(), up.port())), 0o644); err != nil {
		t.Fatal(err)
	}
	ports := testutil.FreePorts(t, 3)
	dnsAddr, apiAddr := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[2])
	corefile := fmt.Sprintf(`.:%d {
 bind 127.0.0.1
 prometheus 127.0.0.1:%d
 gslb {
  zone example.org. %s
  state_persist_enable
  state_persist_path %s
  state_persist_interval 1h
  api_enable
  api_listen_port %d
  api_overrides_file %s
%s }
}
`, ports[0], ports[2], filepath.Join(dir, "zone.yml"), filepath.Join(dir, "state.json"), ports[1], filepath.Join(dir, "overrides.json"), options)
	if err := os.WriteFile(filepath.Join(dir, "Corefile"), []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	notify := listenNotify(t, filepath.Join(dir, "notify.sock"))
	logs, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	readLogs := func() string { b, _ := os.ReadFile(logs.Name()); return string(b) }
	pidfile := filepath.Join(dir, "pid")
	// The output is a file: the processes that replace this one write to it too, after the
	// test's child has exited.
	cmd := exec.Command(bin, "-conf", filepath.Join(dir, "Corefile"), "-pidfile", pidfile)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logs, logs
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+notify.path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }()
	current := func() int {
		b, _ := os.ReadFile(pidfile)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return pid
	}
	t.Cleanup(func() {
		if pid := current(); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGTERM)
			testutil.Eventually(t, 10*time.Second, func() bool { return gone(pid) }, "meridian %d did not stop", pid)
		}
		_ = cmd.Process.Kill()
		if t.Failed() || testing.Verbose() {
			t.Logf("meridian's output:\n%s", readLogs())
		}
	})

	client := &admin.Client{BaseURL: "http://" + apiAddr, HTTP: &http.Client{Timeout: 5 * time.Second}}
	testutil.Eventually(t, 20*time.Second, func() bool {
		_, err := client.Act(context.Background(), overlay.Disable, admin.ActionRequest{Selector: admin.Selector{Keys: []string{"www.example.org.|127.0.0.2|0"}}})
		return err == nil
	}, "the admin API does not answer:\n%s", readLogs())
	right := func() bool {
		m := new(dns.Msg)
		m.SetQuestion("www.example.org.", dns.TypeA)
		r, err := dns.Exchange(m, dnsAddr)
		return err == nil && onlyA(r, "127.0.0.3")
	}
	testutil.Eventually(t, 20*time.Second, right, "never answered 127.0.0.3 alone:\n%s", readLogs())
	if got := notify.next(t); got != fmt.Sprintf("READY=1\nMAINPID=%d", cmd.Process.Pid) {
		t.Fatalf("systemd was told %q", got)
	}

	// fastAnswered sends 100 queries, which must be answered right, and returns how many of
	// them the fast path answered.
	fastAnswered := func(when string) float64 {
		t.Helper()
		counter := fmt.Sprintf(`coredns_gslb_fastpath_packets_total{address=%q,path="fast"}`, dnsAddr)
		before := scrape(t, metrics, counter)
		for range 100 {
			if !right() {
				t.Fatalf("%s: a wrong answer", when)
			}
		}
		return scrape(t, metrics, counter) - before
	}
	// fastAnswers requires that the fast path (when on) answers 100 queries in a row, within
	// 10 s: a process that has just started after an upgrade takes the queries back from its
	// parent's sockets once the parent has left (the pidfd tells it at once), and until then
	// they go to CoreDNS's socket.
	fastAnswers := func(when string) {
		t.Helper()
		if !fast {
			return
		}
		var n float64
		testutil.Eventually(t, 10*time.Second, func() bool { n = fastAnswered(when); return n == 100 },
			"%s: the fast path answered %s of 100 queries", when, func() string { return fmt.Sprint(n) })
	}
	fastAnswers("before the upgrades")
	const loadEvery = 2 * time.Millisecond
	load := startLoad(t, dnsAddr, "www.example.org.", "127.0.0.3", loadEvery)
	pids := map[int]bool{current(): true}
	var signalled []time.Time
	for i := range upgrades {
		old := current()
		sentBefore := load.sentSoFar()
		signalled = append(signalled, time.Now())
		install()
		if err := syscall.Kill(old, syscall.SIGUSR2); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 30*time.Second, func() bool { return current() != old && gone(old) },
			"upgrade %d: %d was not replaced:\n%s", i+1, old, readLogs())
		// The load ran through this upgrade: at a quarter of its rate at least (a ticker
		// drops the ticks a starved sender misses), and never fewer than 5 queries.
		took := time.Since(signalled[i])
		if n := load.sentSoFar() - sentBefore; n < max(5, int(took/(4*loadEvery))) {
			t.Errorf("upgrade %d: only %d queries sent in its %v", i+1, n, took.Round(time.Millisecond))
		}
		pid := current()
		if pids[pid] {
			t.Fatalf("upgrade %d: PID %d again", i+1, pid)
		}
		pids[pid] = true
		if got := notify.next(t); got != fmt.Sprintf("READY=1\nMAINPID=%d", pid) {
			t.Fatalf("upgrade %d: systemd was told %q, want the new PID %d", i+1, got, pid)
		}
		if _, err := client.Zones(context.Background()); err != nil {
			t.Fatalf("upgrade %d: the admin API: %v", i+1, err)
		}
	}
	sent, lost, wrong := load.stop()
	t.Logf("%d upgrades, %d queries: %d lost, %d wrong", upgrades, sent, len(lost), wrong)
	if len(lost) != 0 || wrong != 0 {
		t.Errorf("%d of %d queries lost and %d wrong across %d upgrades", len(lost), sent, wrong, upgrades)
		for _, at := range lost {
			t.Logf("lost: a query sent at %s; the upgrades were signalled at %v", at.Format("15:04:05.000"), clock(signalled))
		}
	}
	// Every new process started from the health its parent knew, written when SIGUSR2 came.
	if n := strings.Count(readLogs(), "they start at their saved health"); n != upgrades {
		t.Errorf("%d of %d upgraded processes started from the saved health", n, upgrades)
	}
	// The last process's fast path answers: its steering names its own sockets again once its
	// parent's left the group.
	fastAnswers("after the upgrades")
	if logs := readLogs(); strings.Contains(logs, "address already in use") || strings.Contains(logs, "[ERROR]") {
		t.Errorf("errors in the log:\n%s", logs)
	}
}

// clock formats times as hours to milliseconds.
func clock(times []time.Time) []string {
	out := make([]string, len(times))
	for i, at := range times {
		out[i] = at.Format("15:04:05.000")
	}
	return out
}

// gone reports whether process pid has exited: it is no more, or a zombie that nobody reaps
// whose every thread has exited (a zombie leader's threads may still run, and hold the
// process's files).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state is the field after the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X') {
		return false
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	return err != nil || len(tasks) <= 1
}

// onlyA reports whether r answers the one address want.
func onlyA(r *dns.Msg, want string) bool {
	if len(r.Answer) != 1 {
		return false
	}
	a, ok := r.Answer[0].(*dns.A)
	return ok && a.A.String() == want
}

// notifySocket is a socket in systemd's place: it receives what sd_notify sends.
type notifySocket struct {
	path string
	c    *net.UnixConn
}

// listenNotify listens on the datagram socket path.
func listenNotify(t *testing.T, path string) *notifySocket {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &notifySocket{path: path, c: c}
}

// next returns the next notification, failing the test after 30 s without one.
func (n *notifySocket) next(t *testing.T) string {
	t.Helper()
	_ = n.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 4096)
	k, err := n.c.Read(buf)
	if err != nil {
		t.Fatalf("no notification: %v", err)
	}
	return string(buf[:k])
}

// queryLoad sends a query every interval and checks each answer.
type queryLoad struct {
	c        *net.UDPConn
	want     string
	done     chan struct{}
	sending  sync.WaitGroup
	reading  sync.WaitGroup
	mu       sync.Mutex
	pending  map[uint16]time.Time // when each query without an answer yet was sent
	sent     int
	answered int
	wrong    int
}

// startLoad starts sending queries for name to addr, one every interval, until stop; an
// answer other than want alone is wrong.
func startLoad(t *testing.T, addr, name, want string, interval time.Duration) *queryLoad {
	t.Helper()
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialUDP("udp", nil, raddr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadBuffer(4 << 20)
	l := &queryLoad{c: c, want: want, done: make(chan struct{}), pending: map[uint16]time.Time{}}
	l.reading.Go(l.read)
	l.sending.Go(func() { l.send(name, interval) })
	return l
}

func (l *queryLoad) send(name string, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	for id := uint16(1); ; id++ {
		select {
		case <-l.done:
			return
		case <-tick.C:
		}
		m.Id = id
		b, _ := m.Pack()
		l.mu.Lock()
		l.pending[id] = time.Now()
		l.sent++
		l.mu.Unlock()
		_, _ = l.c.Write(b)
	}
}

func (l *queryLoad) read() {
	buf := make([]byte, 4096)
	for {
		n, err := l.c.Read(buf)
		if err != nil {
			return
		}
		r := new(dns.Msg)
		if r.Unpack(buf[:n]) != nil {
			continue
		}
		l.mu.Lock()
		if _, ok := l.pending[r.Id]; ok {
			delete(l.pending, r.Id)
			l.answered++
			if !onlyA(r, l.want) {
				l.wrong++
			}
		}
		l.mu.Unlock()
	}
}

// sentSoFar returns how many queries the load has sent.
func (l *queryLoad) sentSoFar() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sent
}

// stop ends the load, waits up to five seconds for the last answers, and returns how many
// queries were sent and answered wrong, and when each lost one was sent. The sender has
// stopped before the answers are awaited: one sent after that would count as lost.
func (l *queryLoad) stop() (sent int, lost []time.Time, wrong int) {
	close(l.done)
	l.sending.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		n := len(l.pending)
		l.mu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	l.c.Close()
	l.reading.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, at := range l.pending {
		lost = append(lost, at)
	}
	return l.sent, lost, l.wrong
}
