package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// addresses returns the A/AAAA/CNAME data of an answer section, sorted.
func addresses(m *dns.Msg) []string {
	out := inOrder(m)
	slices.Sort(out)
	return out
}

// serveZone starts meridian serving yaml as zone example.org. with extra Corefile lines.
func serveZone(t *testing.T, yaml, extra string) *testutil.Server {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "zone.yml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return testutil.Start(t, dir, func(port int) string {
		return fmt.Sprintf(".:%d {\n bind 127.0.0.1\n gslb {\n  zone example.org. %s\n%s }\n}\n", port, filepath.Join(dir, "zone.yml"), extra)
	})
}

// referenceExample loads a reference example from the config package's test data; with
// unhealthy, every backend gets a check that always fails, which is when fallback policies apply.
func referenceExample(t *testing.T, name string, unhealthy bool) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "internal", "config", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	if unhealthy {
		// A check that fails at once without touching the network: /bin/false exits 1.
		s = strings.ReplaceAll(s, `- address: "`, `- healthchecks: [{type: exec, params: {command: /bin/false}}]
        address: "`)
	}
	return s
}

func TestReferenceExamplesAnswerAsSpecified(t *testing.T) {
	tests := []struct {
		file      string
		unhealthy bool
		qname     string
		qtype     uint16
		repeat    int
		// check gets every answer of the repeated query.
		check func(t *testing.T, answers []*dns.Msg)
	}{
		{"failover.yml", false, "app.example.org.", dns.TypeA, 5, func(t *testing.T, as []*dns.Msg) {
			for _, a := range as {
				if got := addresses(a); !slices.Equal(got, []string{"10.0.0.1"}) {
					t.Fatalf("failover answered %v, want the priority 1 backend only", got)
				}
			}
		}},
		{"roundrobin.yml", false, "app.example.org.", dns.TypeA, 4, func(t *testing.T, as []*dns.Msg) {
			var seq []string
			for _, a := range as {
				got := addresses(a)
				if len(got) != 1 {
					t.Fatalf("roundrobin answered %v, want one backend", got)
				}
				seq = append(seq, got[0])
			}
			if seq[0] == seq[1] || seq[0] != seq[2] || seq[1] != seq[3] {
				t.Fatalf("roundrobin sequence %v does not alternate", seq)
			}
		}},
		{"random.yml", false, "app.example.org.", dns.TypeA, 40, func(t *testing.T, as []*dns.Msg) {
			firsts := map[string]bool{}
			for _, a := range as {
				if len(a.Answer) != 2 {
					t.Fatalf("random answered %v, want both backends", addresses(a))
				}
				firsts[a.Answer[0].(*dns.A).A.String()] = true
			}
			if len(firsts) != 2 {
				t.Fatalf("in 40 answers the first backend was always %v", firsts)
			}
		}},
		{"weighted.yml", false, "app.example.org.", dns.TypeA, 400, func(t *testing.T, as []*dns.Msg) {
			n := 0
			for _, a := range as {
				if got := addresses(a); len(got) == 1 && got[0] == "10.0.0.1" {
					n++
				}
			}
			if share := float64(n) / float64(len(as)); share < 0.7 || share > 0.9 {
				t.Fatalf("weight 8 of 10 got %.2f of the answers", share)
			}
		}},
		{"iphash.yml", false, "app.example.org.", dns.TypeA, 5, func(t *testing.T, as []*dns.Msg) {
			for _, a := range as[1:] {
				if !slices.Equal(addresses(a), addresses(as[0])) || len(a.Answer) != 1 {
					t.Fatalf("ip-hash answered %v then %v to one client", addresses(as[0]), addresses(a))
				}
			}
		}},
		{"fail_closed.yml", true, "webapp.example.org.", dns.TypeA, 1, func(t *testing.T, as []*dns.Msg) {
			if as[0].Rcode != dns.RcodeNameError || len(as[0].Answer) != 0 || len(as[0].Ns) != 1 {
				t.Fatalf("fail-closed NXDOMAIN answered %s %v %v", dns.RcodeToString[as[0].Rcode], as[0].Answer, as[0].Ns)
			}
		}},
		{"fail_specific_ips.yml", true, "api.example.org.", dns.TypeAAAA, 1, func(t *testing.T, as []*dns.Msg) {
			if got := addresses(as[0]); !slices.Equal(got, []string{"2001:db8::1"}) {
				t.Fatalf("fail-specific AAAA answered %v", got)
			}
		}},
		{"fail_specific_ips.yml", true, "api.example.org.", dns.TypeA, 1, func(t *testing.T, as []*dns.Msg) {
			if got := addresses(as[0]); !slices.Equal(got, []string{"1.2.3.4"}) {
				t.Fatalf("fail-specific A answered %v", got)
			}
		}},
		{"fail_specific_cname.yml", true, "api.example.org.", dns.TypeA, 1, func(t *testing.T, as []*dns.Msg) {
			if got := addresses(as[0]); !slices.Equal(got, []string{"CNAME backup.cdn.cloudflare.net."}) {
				t.Fatalf("fail-specific CNAME answered %v", got)
			}
		}},
		{"failover.yml", true, "app.example.org.", dns.TypeA, 1, func(t *testing.T, as []*dns.Msg) {
			if got := addresses(as[0]); !slices.Equal(got, []string{"10.0.0.1", "10.0.0.2"}) {
				t.Fatalf("fail-open with every backend down answered %v, want every enabled backend", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/unhealthy=%v/%s", tt.file, tt.unhealthy, dns.TypeToString[tt.qtype]), func(t *testing.T) {
			t.Parallel()
			s := serveZone(t, referenceExample(t, tt.file, tt.unhealthy), "")
			var answers []*dns.Msg
			for i := range tt.repeat {
				network := []string{"udp", "tcp"}[i%2]
				r := s.Query(t, network, tt.qname, tt.qtype)
				if !r.Authoritative {
					t.Fatalf("%s answer without AA", network)
				}
				answers = append(answers, r)
			}
			tt.check(t, answers)
		})
	}
}

const bigZone = `
records:
  www.example.org.:
    backends:
      - {address: 10.0.0.1}
  many.example.org.:
    mode: random
    backends:
`

func TestAuthoritativeBehaviourOverSockets(t *testing.T) {
	t.Parallel()
	yaml := bigZone
	for i := 1; i <= 80; i++ {
		yaml += fmt.Sprintf("      - {address: 10.1.0.%d}\n", i)
	}
	s := serveZone(t, yaml, "")
	for _, network := range []string{"udp", "tcp"} {
		r := s.Query(t, network, "WWW.Example.ORG", dns.TypeA)
		if !r.Authoritative || !slices.Equal(addresses(r), []string{"10.0.0.1"}) {
			t.Errorf("%s: %v", network, r)
		}
		for _, qtype := range []uint16{dns.TypeMX, dns.TypeTXT, dns.TypeHTTPS} {
			r = s.Query(t, network, "www.example.org", qtype)
			if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 || len(r.Ns) != 1 || r.Ns[0].Header().Rrtype != dns.TypeSOA {
				if qtype == dns.TypeHTTPS && len(r.Answer) == 1 {
					continue // HTTPS is answered from the backends
				}
				t.Errorf("%s %s: want NODATA with SOA, got %v", network, dns.TypeToString[qtype], r)
			}
		}
		r = s.Query(t, network, "nope.example.org", dns.TypeA)
		if r.Rcode != dns.RcodeNameError || !r.Authoritative || len(r.Ns) != 1 {
			t.Errorf("%s: unknown name: %v", network, r)
		}
		r = s.Query(t, network, "example.org", dns.TypeSOA)
		if len(r.Answer) != 1 || r.Answer[0].Header().Rrtype != dns.TypeSOA {
			t.Errorf("%s: apex SOA: %v", network, r)
		}
		r = s.Query(t, network, "example.org", dns.TypeNS)
		if len(r.Answer) != 1 || r.Answer[0].(*dns.NS).Ns != "ns1.example.org." {
			t.Errorf("%s: apex NS: %v", network, r)
		}
	}
	// 80 addresses do not fit 512 bytes: UDP truncates, TCP carries them all.
	c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
	q := new(dns.Msg)
	q.SetQuestion("many.example.org.", dns.TypeA)
	r, _, err := c.Exchange(q, s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Truncated {
		t.Errorf("UDP answer of 80 addresses not truncated: %d answers", len(r.Answer))
	}
	if r = s.Exchange(t, "tcp", q); r.Truncated || len(r.Answer) != 80 {
		t.Errorf("TCP answer: truncated %v with %d answers, want all 80", r.Truncated, len(r.Answer))
	}
}

func TestECSOverSockets(t *testing.T) {
	t.Parallel()
	s := serveZone(t, `
records:
  sticky.example.org.:
    mode: ip-hash
    backends:
      - {address: 10.2.0.1}
      - {address: 10.2.0.2}
      - {address: 10.2.0.3}
`, "  use_edns_csubnet\n")
	answers := map[string]bool{}
	for i := range 24 {
		q := new(dns.Msg)
		q.SetQuestion("sticky.example.org.", dns.TypeA)
		q.SetEdns0(1232, false)
		q.IsEdns0().Option = []dns.EDNS0{&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: net.IPv4(198, 51, byte(i), 0)}}
		r := s.Exchange(t, "udp", q)
		answers[addresses(r)[0]] = true
		var scope uint8 = 255
		for _, o := range r.IsEdns0().Option {
			if e, ok := o.(*dns.EDNS0_SUBNET); ok {
				scope = e.SourceScope
			}
		}
		if scope != 24 {
			t.Fatalf("ECS scope %d in the reply, want 24", scope)
		}
	}
	if len(answers) < 2 {
		t.Fatalf("24 client subnets all got %v", answers)
	}
}

func TestLiveReloadKeepsServingThroughABadFile(t *testing.T) {
	t.Parallel()
	s := serveZone(t, "records:\n  www.example.org.:\n    backends: [{address: 10.0.0.1}]\n", "")
	zone := filepath.Join(s.Dir, "zone.yml")
	answerIs := func(want string) func() bool {
		return func() bool {
			r := s.Query(t, "udp", "www.example.org", dns.TypeA)
			return slices.Equal(addresses(r), []string{want})
		}
	}
	write := func(content string) {
		// Write a new file and rename it into place, as editors and deploy tools do.
		tmp := zone + ".tmp"
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, zone); err != nil {
			t.Fatal(err)
		}
	}
	write("records:\n  www.example.org.:\n    backends: [{address: 10.0.0.2}]\n")
	testutil.Eventually(t, 5*time.Second, answerIs("10.0.0.2"), "the answer did not follow the changed file:\n%s", s.Logs)

	write("records:\n  www.example.org.:\n    mode: round-robin\n    backends: [{address: 10.0.0.3}]\n")
	testutil.Eventually(t, 5*time.Second, func() bool { return strings.Contains(s.Logs(), "reload failed") }, "no reload error logged")
	if !strings.Contains(s.Logs(), "zone.yml:3:11") {
		t.Errorf("the reload error does not name the file position:\n%s", s.Logs())
	}
	for range 20 {
		if !answerIs("10.0.0.2")() {
			t.Fatal("a bad file replaced the serving configuration")
		}
	}
	write("records:\n  www.example.org.:\n    backends: [{address: 10.0.0.4}]\n")
	testutil.Eventually(t, 5*time.Second, answerIs("10.0.0.4"), "the answer did not follow the fixed file")
}

// writeFile writes content to the file name in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string { return writeFile(t, dir, name, content) }
	good := write("good.yml", "records:\n  www.example.org.:\n    backends: [{address: 10.0.0.1}]\n")
	bad := write("bad.yml", "records:\n  www.example.org.:\n    mode: failvoer\n    backends:\n      - {address: 10.0.0.300}\n  www.example.com.:\n    backends: [{address: 10.0.0.1}]\n")
	old := write("old.yml", "records:\n  www.example.org.:\n    failover_policy: {mode: fail-open}\n    backends: [{address: 10.0.0.1}]\n")
	badCheck := write("checks.yml", "records:\n  www.example.org.:\n    backends:\n      - {address: 10.0.0.1, healthchecks: [{type: tcp, params: {colour: red}}]}\n")
	tests := []struct {
		name     string
		corefile string
		wantCode int
		want     []string
	}{
		{"valid", ".:53 {\n gslb {\n  zone example.org. " + good + "\n }\n cache\n}\n", 0, []string{"OK"}},
		{"every YAML error", ".:53 {\n gslb {\n  zone example.org. " + bad + "\n }\n}\n", 1, []string{
			"bad.yml:3:11", `did you mean "failover"`, "bad.yml:5:", "10.0.0.300", "bad.yml:6:", "outside zone", "3 error(s)"}},
		{"a deprecated spelling warns", ".:53 {\n gslb {\n  zone example.org. " + old + "\n }\n}\n", 0, []string{
			"warning: " + old + `:3:5: records["www.example.org."].failover_policy: failover_policy is deprecated: rename it fallback_policy`, "OK"}},
		{"unknown gslb option", ".:53 {\n gslb {\n  zone example.org. " + good + "\n  nonsense\n }\n}\n", 1, []string{"Corefile:4", `unknown option "nonsense"`}},
		{"unknown directive", ".:53 {\n gslb " + good + " example.org\n frobnicate\n}\n", 1, []string{"frobnicate"}},
		{"missing YAML file", ".:53 {\n gslb " + filepath.Join(dir, "absent.yml") + " example.org\n}\n", 1, []string{"absent.yml"}},
		{"bad health-check parameters", ".:53 {\n gslb " + badCheck + " example.org\n}\n", 1, []string{"checks.yml:4:", "params.colour: unknown parameter", "params.port: required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core := write("Corefile", tt.corefile)
			var out, errs strings.Builder
			code := runCheck([]string{"-conf", core}, &out, &errs)
			text := out.String() + errs.String()
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d:\n%s", code, tt.wantCode, text)
			}
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("output lacks %q:\n%s", w, text)
				}
			}
		})
	}
}

func TestCheckCompat(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hashed := write("hashed.yml", "records:\n  www.example.org.:\n    mode: ip-hash\n    backends: [{address: 10.0.0.9}, {address: 10.0.0.10}]\n")
	plain := write("plain.yml", "defaults: {alpn: [h3, h2]}\nrecords:\n  www.example.org.:\n    backends: [{address: 10.0.0.1}]\n")
	tests := []struct {
		name, corefile string
		want           []string
		wantNone       bool
	}{
		{"a CoreDNS-GSLB Corefile", ".:53 {\n gslb {\n  zones {\n   example.org. " + hashed + "\n  }\n }\n}\n", []string{
			"Corefile:2: api_enable: CoreDNS-GSLB serves its HTTP API on 0.0.0.0:8080",
			"Corefile:2: disable_txt:",
			"hashed.yml:2: www.example.org. mode ip-hash:",
			"hashed.yml:2: alpn (1 records of example.org.):",
			"Corefile:2: coredns_gslb_metrics:",
			"OK, 5 difference(s) from CoreDNS-GSLB"}, false},
		{"one that behaves the same", ".:53 {\n gslb {\n  zone example.org. " + plain + "\n  api_enable false\n  enable_txt\n  coredns_gslb_metrics\n }\n}\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core := write("Corefile", tt.corefile)
			var out, errs strings.Builder
			if code := runCheck([]string{"-compat", "-conf", core}, &out, &errs); code != 0 {
				t.Fatalf("exit %d:\n%s%s", code, out.String(), errs.String())
			}
			text := out.String()
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("output lacks %q:\n%s", w, text)
				}
			}
			if tt.wantNone && text != core+": OK\n" {
				t.Errorf("differences reported for a configuration that behaves the same:\n%s", text)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	out, err := testutil.Command(t, "-version")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "meridian ") || !strings.Contains(out, "coredns 1.15.0") {
		t.Fatalf("-version printed %q", out)
	}
}

func TestZoneTransfersAreRefusedOverSockets(t *testing.T) {
	t.Parallel()
	s := serveZone(t, "records:\n  www.example.org.:\n    backends: [{address: 10.0.0.1}]\n", "")
	for _, network := range []string{"udp", "tcp"} {
		for _, qtype := range []uint16{dns.TypeAXFR, dns.TypeIXFR} {
			r := s.Query(t, network, "example.org", qtype)
			if r.Rcode != dns.RcodeRefused || len(r.Question) != 1 || r.Question[0].Qtype != qtype || len(r.Answer)+len(r.Ns) != 0 {
				t.Errorf("%s %s: want REFUSED with the question, got %v", network, dns.TypeToString[qtype], r)
			}
		}
	}
	if _, err := exec.LookPath("dig"); err != nil {
		t.Skip("no dig (make deps installs dnsutils)")
	}
	host, port, _ := net.SplitHostPort(s.Addr)
	// dig's AXFR goes over TCP; +tries=1 +time=5 bounds a transfer that never ends. A refusal
	// fails the transfer with no record printed; the lone SOA of old was printed first.
	out, _ := exec.Command("dig", "@"+host, "-p", port, "+tries=1", "+time=5", "example.org.", "AXFR").CombinedOutput()
	if !strings.Contains(string(out), "; Transfer failed.") || strings.Contains(string(out), "SOA") {
		t.Errorf("dig AXFR: want a refused transfer, got:\n%s", out)
	}
}
