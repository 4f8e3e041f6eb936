package testutil

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// updateServerStartTimeout bounds one start of BIND or Knot, until every zone answers its SOA.
const updateServerStartTimeout = 10 * time.Second

// UpdateServer is a running authoritative server (BIND 9 or Knot DNS) that accepts RFC 2136
// dynamic updates signed with a TSIG key: the operator's DNS that sites write heartbeats into.
// It answers authoritatively, does not recurse, and applies an update at once (no NOTIFY, no
// transfers). Everything it writes (configuration, zone files, journals, PID file, control
// socket) lives in the test's temporary directory. It is stopped when the test ends.
type UpdateServer struct {
	// Addr is the server's address on 127.0.0.1, host:port, for UDP and TCP.
	Addr string
	// Kind is "bind" or "knot".
	Kind string
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{}
}

// TSIGKey is the TSIG key an UpdateServer accepts updates signed with.
type TSIGKey struct {
	// Name is the key's name, a fully qualified domain name ("meridian-test.").
	Name string
	// Algorithm is the key's algorithm as miekg/dns names it (dns.HmacSHA256).
	Algorithm string
	// Secret is the shared secret, base64.
	Secret string
}

// updateServerKind is how one server program is found, configured and run.
type updateServerKind struct {
	kind, bin, pkg string
	// config returns the configuration file's text for a server in dir on port.
	config func(dir string, port int, key TSIGKey, origins []string) string
	// args returns the command line after the binary, for the configuration file conf.
	args func(conf string) []string
	// port is the port to listen on, 0 for a free one.
	port int
}

var bindKind = updateServerKind{kind: "bind", bin: "named", pkg: "bind9", config: bindConfig,
	// -g: foreground, logging to stderr; -4: IPv4 only; -n 1: one worker thread. Without -u
	// named stays the user that started it (root or not), who owns the temporary directory.
	args: func(conf string) []string { return []string{"-g", "-4", "-n", "1", "-c", conf} }}

var knotKind = updateServerKind{kind: "knot", bin: "knotd", pkg: "knot", config: knotConfig,
	// knotd runs in the foreground unless given -d.
	args: func(conf string) []string { return []string{"-c", conf} }}

// StartBIND runs Debian's BIND 9 (named) for the test on a free 127.0.0.1 port, serving each
// zone of zones: an origin and its initial records, zone file lines with names relative to
// the origin (the helper adds the SOA, an NS record ns.origin and its address 127.0.0.1). Each
// zone takes updates signed with key, of any name in it and any type (update-policy zonesub
// ANY). The test is skipped when named is not installed (Debian package bind9; make deps
// installs it).
func StartBIND(t testing.TB, key TSIGKey, zones map[string][]string) *UpdateServer {
	t.Helper()
	return startUpdateServer(t, bindKind, key, zones)
}

// StartKnot is StartBIND with Debian's Knot DNS (knotd): each zone takes updates signed with
// key (an ACL of the key with action update), kept in a journal and written back to the zone
// file in the temporary directory. The test is skipped when knotd is not installed (Debian
// package knot; make deps installs it).
func StartKnot(t testing.TB, key TSIGKey, zones map[string][]string) *UpdateServer {
	t.Helper()
	return startUpdateServer(t, knotKind, key, zones)
}

// startUpdateServer writes the zones and the configuration of kind into a temporary directory
// and starts the server, retrying on another port when it does not come up (the port was
// taken between FreePort and the server's bind).
func startUpdateServer(t testing.TB, kind updateServerKind, key TSIGKey, zones map[string][]string) *UpdateServer {
	t.Helper()
	bin := Sbin(t, kind.bin, kind.pkg)
	if len(zones) == 0 {
		t.Fatalf("%s: no zones to serve", kind.kind)
	}
	dir := t.TempDir()
	origins := make([]string, 0, len(zones))
	for origin, rrs := range zones {
		origin = dns.Fqdn(origin)
		origins = append(origins, origin)
		if err := os.WriteFile(filepath.Join(dir, zoneFileName(origin)), []byte(zoneFile(origin, 1, rrs)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(origins)
	var lastLogs string
	for range 3 {
		port := kind.port
		if port == 0 {
			port = FreePort(t)
		}
		conf := filepath.Join(dir, kind.kind+".conf")
		if err := os.WriteFile(conf, []byte(kind.config(dir, port, key, origins)), 0o644); err != nil {
			t.Fatal(err)
		}
		s := &UpdateServer{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Kind: kind.kind, logs: &syncBuffer{}, done: make(chan struct{})}
		s.cmd = exec.Command(bin, kind.args(conf)...)
		s.cmd.Dir = dir
		s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
		if err := s.cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", bin, err)
		}
		go func() { _ = s.cmd.Wait(); close(s.done) }()
		if s.waitReady(origins) {
			t.Cleanup(s.Stop)
			return s
		}
		s.Stop()
		lastLogs = s.Logs()
	}
	t.Fatalf("%s did not start:\n%s", kind.bin, lastLogs)
	return nil
}

// Sbin returns the path of the program name, looked up in PATH and then in /usr/sbin
// (which a non-root PATH may lack), and skips the test when it is not installed.
func Sbin(t testing.TB, name, pkg string) string {
	t.Helper()
	if bin, err := exec.LookPath(name); err == nil {
		return bin
	}
	bin := filepath.Join("/usr/sbin", name)
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("%s is not installed (Debian package %s; make deps installs it)", name, pkg)
	}
	return bin
}

// zoneFileName is the name of origin's zone file in the server's directory.
func zoneFileName(origin string) string {
	if origin == "." {
		return "root.zone"
	}
	return strings.TrimSuffix(origin, ".") + ".zone"
}

// tsigAlgorithm is miekg's algorithm name ("hmac-sha256.") as BIND and Knot spell it.
func tsigAlgorithm(key TSIGKey) string { return strings.TrimSuffix(key.Algorithm, ".") }

// bindConfig is named.conf for a server in dir on port: no recursion, no NOTIFY, no rndc
// control channel (bindOptions), updates of origins allowed with key.
func bindConfig(dir string, port int, key TSIGKey, origins []string) string {
	var b strings.Builder
	b.WriteString(bindOptions(dir, port, `recursion no;
	allow-query { any; };`))
	fmt.Fprintf(&b, `key %q {
	algorithm %s;
	secret %q;
};
`, key.Name, tsigAlgorithm(key), key.Secret)
	for _, origin := range origins {
		fmt.Fprintf(&b, "zone %q {\n\ttype primary;\n\tfile %q;\n\tupdate-policy { grant %q zonesub ANY; };\n};\n",
			origin, filepath.Join(dir, zoneFileName(origin)), key.Name)
	}
	return b.String()
}

// bindOptions is the options and controls of a named.conf for a server in dir listening on
// 127.0.0.1 port, with the options more (a tab before each line but the first): no NOTIFY,
// no DNSSEC validation, no rndc control channel, every path in dir (a bindkeys-file that does
// not exist, so that named takes its built-in trust anchors rather than reading /etc/bind).
func bindOptions(dir string, port int, more string) string {
	return fmt.Sprintf(`options {
	directory %q;
	pid-file %q;
	session-keyfile %q;
	managed-keys-directory %q;
	bindkeys-file %q;
	geoip-directory none;
	listen-on port %d { 127.0.0.1; };
	listen-on-v6 { none; };
	notify no;
	dnssec-validation no;
	%s
};
controls { };
`, dir, filepath.Join(dir, "named.pid"), filepath.Join(dir, "session.key"), dir, filepath.Join(dir, "bind.keys"), port, more)
}

// knotUpdateACL is the key and the ACL "update" of knot.conf that allow the updates signed
// with key.
func knotUpdateACL(key TSIGKey) string {
	return fmt.Sprintf(`key:
  - id: %s
    algorithm: %s
    secret: %s
acl:
  - id: update
    key: %s
    action: update
`, key.Name, tsigAlgorithm(key), key.Secret, key.Name)
}

// knotConfig is knot.conf for a server in dir on port: one worker of each kind, the rundir,
// storage (zone files, journal, timers) and control socket in dir, updates allowed by an ACL
// of the key. The socket's path must fit a Unix socket address (107 bytes), which a
// t.TempDir under /tmp does: Go cuts the test name in it to 64 bytes.
func knotConfig(dir string, port int, key TSIGKey, origins []string) string {
	var b strings.Builder
	b.WriteString(knotServerConfig(dir, fmt.Sprintf("127.0.0.1@%d", port)))
	b.WriteString(knotUpdateACL(key))
	fmt.Fprintf(&b, `template:
  - id: default
    storage: %q
    file: "%%s.zone"
    acl: update
zone:
`, dir)
	for _, origin := range origins {
		fmt.Fprintf(&b, "  - domain: %s\n    file: %q\n", origin, zoneFileName(origin))
	}
	return b.String()
}

// knotServerConfig is the start of a knot.conf for a server in dir listening on listen
// ("127.0.0.1@5300"): one worker of each kind, the rundir, storage (zone files, journal,
// timers) and control socket in dir, logs to stderr.
func knotServerConfig(dir string, listen string) string {
	return fmt.Sprintf(`server:
    rundir: %q
    pidfile: %q
    listen: %s
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
database:
    storage: %q
control:
    listen: %q
log:
  - target: stderr
    any: info
`, dir, filepath.Join(dir, "knot.pid"), listen, dir, filepath.Join(dir, "knot.sock"))
}

// waitReady polls the server until it answers every origin's SOA with NOERROR (its zones are
// loaded), it exits, or the start timeout passes.
func (s *UpdateServer) waitReady(origins []string) bool {
	deadline := time.Now().Add(updateServerStartTimeout)
	c := &dns.Client{Net: "udp", Timeout: 200 * time.Millisecond}
	for _, origin := range origins {
		m := new(dns.Msg)
		m.SetQuestion(origin, dns.TypeSOA)
		for {
			select {
			case <-s.done:
				return false
			default:
			}
			if r, _, err := c.Exchange(m, s.Addr); err == nil && r.Rcode == dns.RcodeSuccess {
				break
			}
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return true
}

// Stop ends the server (SIGTERM, then SIGKILL after five seconds) and waits for it.
func (s *UpdateServer) Stop() { terminate(s.cmd.Process, s.done) }

// Logs returns everything the server printed so far.
func (s *UpdateServer) Logs() string { return s.logs.String() }

// Query asks the server name/qtype over UDP and returns the reply; the test fails, showing
// the server's logs, when there is none.
func (s *UpdateServer) Query(t testing.TB, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
	r, _, err := c.Exchange(m, s.Addr)
	if err != nil {
		t.Fatalf("%s query %s %s: %v\n%s logs:\n%s", s.Kind, name, dns.TypeToString[qtype], err, s.Kind, s.Logs())
	}
	return r
}
