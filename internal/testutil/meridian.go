// Package testutil holds helpers shared by Meridian's tests: building and running the meridian
// binary with a temporary Corefile on a free loopback port, and querying it over UDP and TCP.
package testutil

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// Binary returns the path of the meridian binary: $MERIDIAN_BIN when set (make test builds it
// once for every package), otherwise one built for this test process.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("MERIDIAN_BIN"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "meridian-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "meridian")
		cmd := exec.Command("go", "build", "-o", builtBin, "github.com/meridian-gslb/meridian/cmd/meridian")
		cmd.Dir = moduleRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// moduleRoot returns the repository root, found from this source file's location.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// givenPorts are the ports FreePort and FreePorts returned in this process: the kernel may offer
// a port again once it is closed, and a test that took one for its admin API and then one for
// its DNS server got the same twice (both listeners bound it, with SO_REUSEPORT, and the API's
// requests went to the DNS server half of the time).
var givenPorts = struct {
	sync.Mutex
	m map[int]bool
}{m: map[int]bool{}}

// give reports whether port was not given before, and marks it given.
func give(port int) bool {
	givenPorts.Lock()
	defer givenPorts.Unlock()
	if givenPorts.m[port] {
		return false
	}
	givenPorts.m[port] = true
	return true
}

// FreePort returns a loopback port that is free for both UDP and TCP at the time of the call,
// and that no other call of FreePort or FreePorts in the process returned.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 50 {
		tl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := tl.Addr().(*net.TCPAddr).Port
		ul, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(port))
		tl.Close()
		if err == nil {
			ul.Close()
			if give(port) {
				return port
			}
		}
	}
	t.Fatal("no free port for UDP and TCP")
	return 0
}

// FreePorts returns n distinct loopback ports, each free for both UDP and TCP at the time of the
// call (they are held until all are chosen), and none returned before in the process.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var held []io.Closer
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	ports := make([]int, 0, n)
	for attempts := 0; len(ports) < n; attempts++ {
		if attempts > 50*n {
			t.Fatal("no free ports for UDP and TCP")
		}
		tl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := tl.Addr().(*net.TCPAddr).Port
		ul, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			tl.Close()
			continue
		}
		held = append(held, tl, ul)
		if give(port) {
			ports = append(ports, port)
		}
	}
	return ports
}

// Server is a running meridian process.
type Server struct {
	// Addr is the DNS listener, host:port on loopback.
	Addr string
	// Dir holds the Corefile and any files the test wrote.
	Dir  string
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{}
}

// Start runs meridian with the Corefile that corefile returns for the DNS port it is given,
// in dir (a temporary directory when empty), and waits until it answers. The process is stopped
// when the test ends.
func Start(t testing.TB, dir string, corefile func(port int) string) *Server {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	var lastLogs string
	for attempt := 0; attempt < 3; attempt++ {
		port := FreePort(t)
		s := launch(t, dir, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), corefile(port))
		if s.waitReady(15 * time.Second) {
			t.Cleanup(s.Stop)
			return s
		}
		s.Stop()
		lastLogs = s.Logs()
	}
	t.Fatalf("meridian did not start:\n%s", lastLogs)
	return nil
}

// StartAt is Start on a DNS address (host:port) the caller chose, for servers that must know
// each other's addresses before they start (sites naming their peers). It waits at most
// timeout for the server to answer there.
func StartAt(t testing.TB, dir, addr, corefile string, timeout time.Duration) *Server {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	s := launch(t, dir, addr, corefile)
	t.Cleanup(s.Stop)
	if !s.waitReady(timeout) {
		t.Fatalf("meridian did not start on %s:\n%s", addr, s.Logs())
	}
	return s
}

// launch writes corefile into dir and starts meridian with it, to serve on addr.
func launch(t testing.TB, dir, addr, corefile string) *Server {
	t.Helper()
	path := filepath.Join(dir, "Corefile")
	if os.Getenv(FastPathEnv) == "1" {
		corefile = WithFastPath(corefile)
	}
	if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: addr, Dir: dir, logs: &syncBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(Binary(t), "-conf", path)
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	return s
}

// FastPathEnv names the environment variable that, set to 1, runs every meridian a test starts
// with the fast path on in its gslb blocks (WithFastPath): make test runs the end-to-end tests
// of answers both ways.
const FastPathEnv = "MERIDIAN_TEST_FASTPATH"

// gslbDirective matches a gslb directive's line (not gslb_proxy's): its indentation and the
// rest of the line.
var gslbDirective = regexp.MustCompile(`(?m)^(\s*)gslb(\s[^\n]*)?$`)

// fastPathBypassed matches the directives the fastpath option refuses in a server block, and
// the log plugin's, which does not see the queries the fast path answers: a test that reads the
// log needs every query to reach it.
var fastPathBypassed = regexp.MustCompile(`(?m)^\s*(acl|any|loadbalance|rewrite|tsig|log)(\s|$)`)

// NoFastPath is a Corefile comment that keeps WithFastPath away: a test that compares the two
// paths writes it in the Corefile of the server without the fast path.
const NoFastPath = "# no fastpath"

// WithFastPath returns corefile with the fastpath option in each gslb block (a short form
// gets a block), unless the Corefile has a plugin the fast path refuses or the log plugin, or
// NoFastPath.
func WithFastPath(corefile string) string {
	if fastPathBypassed.MatchString(corefile) || strings.Contains(corefile, NoFastPath) {
		return corefile
	}
	return gslbDirective.ReplaceAllStringFunc(corefile, func(line string) string {
		m := gslbDirective.FindStringSubmatch(line)
		indent, rest := m[1], strings.TrimRight(m[2], " \t")
		if strings.HasSuffix(rest, "{") {
			return line + "\n" + indent + "  fastpath"
		}
		return indent + "gslb" + rest + " {\n" + indent + "  fastpath\n" + indent + "}"
	})
}

// waitReady polls the server with a query until it answers, it exits, or timeout passes.
func (s *Server) waitReady(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	c := &dns.Client{Net: "udp", Timeout: 200 * time.Millisecond}
	m := new(dns.Msg)
	m.SetQuestion("meridian-readiness-probe.invalid.", dns.TypeA)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return false
		default:
		}
		if _, _, err := c.Exchange(m, s.Addr); err == nil {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// Stop ends the process (SIGTERM, then SIGKILL after five seconds) and waits for it.
func (s *Server) Stop() { terminate(s.cmd.Process, s.done) }

// terminate ends a process that a test started (SIGTERM, then SIGKILL after five seconds)
// and waits until done, which is closed once it has been waited for.
func terminate(p *os.Process, done <-chan struct{}) {
	select {
	case <-done:
		return
	default:
	}
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = p.Kill()
		<-done
	}
}

// Signal sends sig to the process.
func (s *Server) Signal(sig os.Signal) error { return s.cmd.Process.Signal(sig) }

// Logs returns everything the process printed so far.
func (s *Server) Logs() string { return s.logs.String() }

// LogsWithStacks ends the process with SIGABRT, whose Go runtime prints every goroutine's
// stack as it exits (SIGQUIT would not: CoreDNS takes it for a graceful stop), and returns
// everything it printed: a failing test's last word on a server that stopped doing something,
// such as a loop that no longer runs.
func (s *Server) LogsWithStacks() string {
	_ = s.cmd.Process.Signal(syscall.SIGABRT)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
	}
	return s.logs.String()
}

// Exchange sends m over net ("udp" or "tcp") and returns the reply.
func (s *Server) Exchange(t testing.TB, network string, m *dns.Msg) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: network, Timeout: 2 * time.Second, UDPSize: 65535}
	r, _, err := c.Exchange(m, s.Addr)
	if err != nil {
		t.Fatalf("%s query %s %s: %v\nserver logs:\n%s", network, m.Question[0].Name, dns.TypeToString[m.Question[0].Qtype], err, s.Logs())
	}
	return r
}

// Query asks name/qtype over network and returns the reply.
func (s *Server) Query(t testing.TB, network, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	return s.Exchange(t, network, m)
}

// Eventually polls cond every 20 ms until it returns true or timeout passes, then fails the
// test with msg formatted with args. An arg that is a func() string (a server's Logs method
// value, say) is called then, when the test fails: what it says is the state at the end of the
// wait, not at its start.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: "+msg, append([]any{timeout}, lateArgs(args)...)...)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lateArgs returns args with every func() string replaced by what it returns now.
func lateArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if f, ok := a.(func() string); ok {
			a = f()
		}
		out[i] = a
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for a process's output and a test reading it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Command runs the meridian binary with args and returns its combined output.
func Command(t testing.TB, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(Binary(t), args...).CombinedOutput()
	return string(out), err
}
