package main

import (
	"encoding/json"
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

// The loopback addresses of the signed hierarchies (port 53): BIND serving the signed root
// and test. TLD, and the name servers of the child zones it delegates.
const (
	dsRoot           = "127.0.39.1"
	dsNS1, dsNS2     = "127.0.39.2", "127.0.39.3"
	dsPluginRoot     = "127.0.39.21"
	dsPluginNS       = "127.0.39.22"
	dsRolloverRoot   = "127.0.39.11"
	dsRolloverNS     = "127.0.39.12"
	validatorTimeout = 20 * time.Second
)

// signedZone is the gslb zone of the validation tests, for the zone origin with its name
// servers ns1 and ns2 at their addresses, and a failover record whose primary and secondary
// are TCP listeners on the ports given.
func signedZone(origin, ns1, ns2 string, primary, secondary int) string {
	return fmt.Sprintf(`soa: {mname: ns1.%[1]s, rname: hostmaster.%[1]s, minimum: 5, ttl: 60}
ns: [ns1.%[1]s, ns2.%[1]s]
defaults:
  record_ttl: 1
static:
  ns1: ["A %[2]s"]
  ns2: ["A %[3]s"]
  "@": ["MX 10 mail", "TXT \"v=spf1 -all\""]
  mail: ["A 192.0.2.25"]
records:
  www.%[1]s:
    mode: roundrobin
    backends: [{address: 192.0.2.10}, {address: 192.0.2.11}, {address: "2001:db8::10"}]
  app.%[1]s:
    mode: failover
    scrape_interval: 200ms
    scrape_timeout: 100ms
    backends:
      - {address: 127.0.0.1, priority: 1, rise: 1, fall: 1, healthchecks: [{type: tcp, params: {port: %[4]d}}]}
      - {address: 127.0.0.2, priority: 2, rise: 1, fall: 1, healthchecks: [{type: tcp, params: {port: %[5]d}}]}
  geo.%[1]s:
    mode: ip-hash
    backends: [{address: 192.0.2.30}, {address: 192.0.2.31}, {address: 192.0.2.32}]
  "*.apps.%[1]s":
    backends: [{address: 192.0.2.40}, {address: 192.0.2.41}]
  v4only.%[1]s:
    backends: [{address: 192.0.2.50}]
`, origin, ns1, ns2, primary, secondary)
}

// listener returns a TCP listener on ip that accepts and closes connections until the test
// ends, and its port.
func listener(t *testing.T, ip string) (net.Listener, int) {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go acceptAndClose(l)
	return l, l.Addr().(*net.TCPAddr).Port
}

// askValidator asks the validating resolver u name/qtype with the DO bit (and an ECS option
// for subnet, unless empty) and returns the reply.
func askValidator(t *testing.T, u *testutil.Unbound, name string, qtype uint16, subnet string) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.SetEdns0(1232, true)
	if subnet != "" {
		if err := testutil.AddECS(m, subnet); err != nil {
			t.Fatal(err)
		}
	}
	c := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
	r, _, err := c.Exchange(m, u.Addr)
	if err != nil {
		t.Fatalf("resolver: %s %s: %v\nunbound log:\n%s", name, dns.TypeToString[qtype], err, u.Log())
	}
	return r
}

// validated checks that r is a validated answer (AD, the rcode want) and returns its answer's
// addresses.
func validated(t *testing.T, u *testutil.Unbound, r *dns.Msg, want int) []string {
	t.Helper()
	if r.Rcode != want || !r.AuthenticatedData {
		t.Errorf("%s %s: %s AD=%v, want %s with AD\n%v\nunbound log:\n%s", r.Question[0].Name, dns.TypeToString[r.Question[0].Qtype],
			dns.RcodeToString[r.Rcode], r.AuthenticatedData, dns.RcodeToString[want], r, tail(u.Log()))
	}
	return addresses(r)
}

// among checks that the addresses got are some of want: none when want is nil.
func among(t *testing.T, got, want []string) {
	t.Helper()
	for _, a := range got {
		if !slices.Contains(want, a) {
			t.Errorf("answer %v, want among %v", got, want)
		}
	}
	if want != nil && len(got) == 0 {
		t.Errorf("no answer, want among %v", want)
	}
}

// TestSignedAnswersValidate runs a signed hierarchy (the root and test. in BIND, signed, the
// root's key the resolver's trust anchor) delegating gslb.test to two meridians signing with
// the same keys (a KSK and a ZSK, key files as dnssec-keygen writes them), and a validating
// unbound: every kind of answer comes back with the AD bit, through a failover, with ECS, and
// from either instance.
func TestSignedAnswersValidate(t *testing.T) {
	dir := t.TempDir()
	ksk := testutil.WriteKey(t, dir, testutil.KeySpec{Zone: "gslb.test", KSK: true, Algorithm: dns.ECDSAP256SHA256})
	zsk := testutil.WriteKey(t, dir, testutil.KeySpec{Zone: "gslb.test", Algorithm: dns.ECDSAP256SHA256})
	h := testutil.StartHierarchy(t, dsRoot, "test",
		testutil.ChildZone{Zone: "gslb.test", NS: map[string]string{"ns1.gslb.test": dsNS1, "ns2.gslb.test": dsNS2}, DS: []string{ksk.DS(60)}})
	primary, pport := listener(t, "127.0.0.1")
	_, sport := listener(t, "127.0.0.2")
	zone := filepath.Join(dir, "gslb.test.yml")
	if err := os.WriteFile(zone, []byte(signedZone("gslb.test.", dsNS1, dsNS2, pport, sport)), 0o644); err != nil {
		t.Fatal(err)
	}
	var servers []*testutil.Server
	for _, ip := range []string{dsNS1, dsNS2} {
		servers = append(servers, testutil.StartAt(t, dir, ip+":53", fmt.Sprintf(`gslb.test {
    bind %s
    gslb {
        zone gslb.test. %s
        use_edns_csubnet
        dnssec {
            key file %s %s
        }
    }
}
`, ip, zone, ksk.Base, zsk.Base), 15*time.Second))
	}
	u := testutil.StartValidator(t, h, dsNS1, dsNS2)

	for _, tt := range []struct {
		name   string
		qtype  uint16
		subnet string
		rcode  int
		want   []string // the answer is one of these addresses (nil: none)
	}{
		{"www.gslb.test", dns.TypeA, "", dns.RcodeSuccess, []string{"192.0.2.10", "192.0.2.11"}},
		{"www.gslb.test", dns.TypeAAAA, "", dns.RcodeSuccess, []string{"2001:db8::10"}},
		{"geo.gslb.test", dns.TypeA, "198.51.100.0/24", dns.RcodeSuccess, []string{"192.0.2.30", "192.0.2.31", "192.0.2.32"}},
		{"geo.gslb.test", dns.TypeA, "203.0.113.0/24", dns.RcodeSuccess, []string{"192.0.2.30", "192.0.2.31", "192.0.2.32"}},
		{"foo.apps.gslb.test", dns.TypeA, "", dns.RcodeSuccess, []string{"192.0.2.40", "192.0.2.41"}},
		{"a.b.apps.gslb.test", dns.TypeA, "", dns.RcodeSuccess, []string{"192.0.2.40", "192.0.2.41"}},
		{"foo.apps.gslb.test", dns.TypeTXT, "", dns.RcodeSuccess, nil},
		{"v4only.gslb.test", dns.TypeAAAA, "", dns.RcodeSuccess, nil},
		{"nope.gslb.test", dns.TypeA, "", dns.RcodeSuccess, nil}, // compact denial: NODATA with NXNAME
		{"x.www.gslb.test", dns.TypeAAAA, "", dns.RcodeSuccess, nil},
		{"mail.gslb.test", dns.TypeA, "", dns.RcodeSuccess, []string{"192.0.2.25"}},
		{"mail.gslb.test", dns.TypeAAAA, "", dns.RcodeSuccess, nil},
		{"gslb.test", dns.TypeMX, "", dns.RcodeSuccess, nil},
		{"gslb.test", dns.TypeDNSKEY, "", dns.RcodeSuccess, nil},
		{"gslb.test", dns.TypeCDS, "", dns.RcodeSuccess, nil},
		{"gslb.test", dns.TypeSOA, "", dns.RcodeSuccess, nil},
		{"apps.gslb.test", dns.TypeA, "", dns.RcodeSuccess, nil}, // an empty non-terminal
	} {
		t.Run(dns.TypeToString[tt.qtype]+" "+tt.name+" "+tt.subnet, func(t *testing.T) {
			for range 4 { // either instance may answer
				among(t, validated(t, u, askValidator(t, u, tt.name, tt.qtype, tt.subnet), tt.rcode), tt.want)
			}
		})
	}

	t.Run("dnsviz", func(t *testing.T) {
		dnsviz(t, dir, h, "gslb.test", "www.gslb.test", "app.gslb.test", "foo.apps.gslb.test", "v4only.gslb.test", "mail.gslb.test")
	})

	t.Run("zonemaster", func(t *testing.T) { zonemasterDNSSEC(t, dir, h, "gslb.test") })

	t.Run("failover", func(t *testing.T) {
		answer := func() []string {
			return validated(t, u, askValidator(t, u, "app.gslb.test", dns.TypeA, ""), dns.RcodeSuccess)
		}
		testutil.Eventually(t, validatorTimeout, func() bool { return slices.Equal(answer(), []string{"127.0.0.1"}) }, "the primary is not answered: %v", answer)
		primary.Close()
		testutil.Eventually(t, validatorTimeout, func() bool { return slices.Equal(answer(), []string{"127.0.0.2"}) }, "no failover: %v\n%s", answer, servers[0].Logs)
	})
}

// TestDNSSECPluginSignsGSLB: CoreDNS-GSLB's deployment, CoreDNS's dnssec plugin (a CSK from
// a BIND key file) beside gslb in the server block, serves gslb's answers signed on the fly,
// the DNSKEY RRset and NSEC black lies, which a validating resolver accepts.
func TestDNSSECPluginSignsGSLB(t *testing.T) {
	dir := t.TempDir()
	csk := testutil.WriteKey(t, dir, testutil.KeySpec{Zone: "cg.test", KSK: true, Algorithm: dns.ECDSAP256SHA256})
	h := testutil.StartHierarchy(t, dsPluginRoot, "test",
		testutil.ChildZone{Zone: "cg.test", NS: map[string]string{"ns1.cg.test": dsPluginNS}, DS: []string{csk.DS(60)}})
	_, pport := listener(t, "127.0.0.1")
	_, sport := listener(t, "127.0.0.2")
	zone := filepath.Join(dir, "cg.test.yml")
	if err := os.WriteFile(zone, []byte(signedZone("cg.test.", dsPluginNS, dsPluginNS, pport, sport)), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.StartAt(t, dir, dsPluginNS+":53", fmt.Sprintf(`cg.test {
    bind %s
    dnssec {
        key file %s
    }
    gslb {
        zone cg.test. %s
    }
}
`, dsPluginNS, csk.Base, zone), 15*time.Second)
	u := testutil.StartValidator(t, h)
	for _, tt := range []struct {
		name  string
		qtype uint16
		want  []string
	}{
		{"www.cg.test", dns.TypeA, []string{"192.0.2.10", "192.0.2.11"}},
		{"app.cg.test", dns.TypeA, []string{"127.0.0.1"}},
		{"foo.apps.cg.test", dns.TypeA, []string{"192.0.2.40", "192.0.2.41"}},
		{"v4only.cg.test", dns.TypeAAAA, nil},
		{"nope.cg.test", dns.TypeA, nil},
		{"mail.cg.test", dns.TypeA, []string{"192.0.2.25"}},
		{"cg.test", dns.TypeDNSKEY, nil},
	} {
		t.Run(dns.TypeToString[tt.qtype]+" "+tt.name, func(t *testing.T) {
			among(t, validated(t, u, askValidator(t, u, tt.name, tt.qtype, ""), dns.RcodeSuccess), tt.want)
		})
	}
}

// TestRolloverUnderValidator rolls every key of a zone (a KSK with its DS at the parent, kept
// by the heartbeats' delegation keeper from the CDS, and a ZSK by pre-publication) by their
// timing metadata, while a validating resolver asks for every kind of answer: none fails to
// validate, and the parent's DS and the DNSKEY RRset end with the new keys alone.
func TestRolloverUnderValidator(t *testing.T) {
	const (
		activate = 12 * time.Second // the new keys sign, the old retire, the old DS goes
		remove   = 24 * time.Second // the old keys leave the DNSKEY RRset
	)
	dir := t.TempDir()
	t0 := time.Now().Truncate(time.Second).Add(time.Second)
	ksk1 := testutil.WriteKey(t, dir, testutil.KeySpec{Zone: "gslb.test", KSK: true, Inactive: t0.Add(activate), SyncDelete: t0.Add(activate), Delete: t0.Add(remove)})
	ksk2 := testutil.WriteKey(t, dir, testutil.KeySpec{Zone: "gslb.test", KSK: true, Publish: t0, Activate: t0.Add(activate), SyncPublish: t0})
	zsk1 := testutil.WriteKey(t, dir, testutil.KeySpec{Zone: "gslb.test", Inactive: t0.Add(activate), Delete: t0.Add(remove)})
	zsk2 := testutil.WriteKey(t, dir, testutil.KeySpec{Zone: "gslb.test", Publish: t0, Activate: t0.Add(activate)})
	h := testutil.StartHierarchy(t, dsRolloverRoot, "test",
		testutil.ChildZone{Zone: "gslb.test", NS: map[string]string{"ns1.gslb.test": dsRolloverNS}, DS: []string{ksk1.DS(2)}})
	_, pport := listener(t, "127.0.0.1")
	_, sport := listener(t, "127.0.0.2")
	zone := filepath.Join(dir, "gslb.test.yml")
	if err := os.WriteFile(zone, []byte(signedZone("gslb.test.", dsRolloverNS, dsRolloverNS, pport, sport)), 0o644); err != nil {
		t.Fatal(err)
	}
	s := testutil.StartAt(t, dir, dsRolloverNS+":53", fmt.Sprintf(`gslb.test {
    bind %[1]s
    gslb {
        zone gslb.test. %[2]s
        site eu-1
        region europe
        heartbeat_zone local test. %[3]s
        heartbeat_tsig %[4]s hmac-sha256 %[5]s
        heartbeat_interval 500ms
        local_healthy_duration 2s
        delegation test. %[3]s
        delegation_ns ns1.gslb.test. %[1]s
        dnssec {
            key file %[6]s %[7]s %[8]s %[9]s
            dnskey_ttl 2s
        }
    }
}
`, dsRolloverNS, zone, dsRolloverRoot, h.Key.Name, h.Key.Secret, ksk1.Base, ksk2.Base, zsk1.Base, zsk2.Base), 15*time.Second)
	u := testutil.StartValidator(t, h)

	queries := []struct {
		name  string
		qtype uint16
	}{
		{"www.gslb.test", dns.TypeA}, {"nope.gslb.test", dns.TypeA}, {"v4only.gslb.test", dns.TypeAAAA},
		{"foo.apps.gslb.test", dns.TypeA}, {"gslb.test", dns.TypeMX}, {"gslb.test", dns.TypeDNSKEY},
	}
	asked := 0
	for time.Since(t0) < remove+4*time.Second {
		for _, q := range queries {
			r := askValidator(t, u, q.name, q.qtype, "")
			asked++
			if r.Rcode != dns.RcodeSuccess || !r.AuthenticatedData {
				t.Fatalf("at t0%+.1fs, %s %s: %s AD=%v\nunbound:\n%s\nmeridian:\n%s", time.Since(t0).Seconds(), q.name, dns.TypeToString[q.qtype],
					dns.RcodeToString[r.Rcode], r.AuthenticatedData, tail(u.Log()), tail(s.Logs()))
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%d validated answers through the rollover", asked)
	tags := func(rrs []dns.RR) []uint16 {
		var out []uint16
		for _, rr := range rrs {
			switch x := rr.(type) {
			case *dns.DS:
				out = append(out, x.KeyTag)
			case *dns.DNSKEY:
				out = append(out, x.KeyTag())
			}
		}
		slices.Sort(out)
		return out
	}
	if got, want := tags(h.Query(t, "gslb.test", dns.TypeDS).Answer), []uint16{ksk2.DNSKEY.KeyTag()}; !slices.Equal(got, want) {
		t.Errorf("the parent's DS: keys %v, want %v", got, want)
	}
	keys := askValidator(t, u, "gslb.test", dns.TypeDNSKEY, "")
	want := []uint16{ksk2.DNSKEY.KeyTag(), zsk2.DNSKEY.KeyTag()}
	slices.Sort(want)
	if got := tags(keys.Answer); !slices.Equal(got, want) {
		t.Errorf("DNSKEY RRset: keys %v, want %v", got, want)
	}
}

// dnsviz probes zone, names in it, and its ancestors from h's root with Debian's dnsviz (authoritative
// analysis, private addresses allowed) and assesses them with the root's key as the trust
// anchor: it must find no error, and every RRset, key and delegation secure.
func dnsviz(t *testing.T, dir string, h *testutil.Hierarchy, zone string, names ...string) {
	bin, err := exec.LookPath("dnsviz")
	if err != nil {
		t.Skip("dnsviz is not installed (Debian package dnsviz; make deps installs it)")
	}
	host, _, _ := net.SplitHostPort(h.Addr)
	probe := filepath.Join(dir, "probe.json")
	args := append([]string{"probe", "-A", "-4", "-a", ".", "-x", ".:ns.nic." + h.TLD + "=" + host, "-o", probe, zone}, names...)
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("dnsviz probe: %v\n%s", err, out)
	}
	anchor := filepath.Join(dir, "anchor")
	if err := os.WriteFile(anchor, []byte(h.Anchor+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	grok := exec.Command(bin, "grok", "-P", "-t", anchor, "-r", probe)
	grok.Env = append(os.Environ(), "PYTHONPATH="+pygraphvizRelease(t, dir))
	out, err = grok.Output()
	if err != nil {
		t.Fatalf("dnsviz grok: %v\n%s", err, out)
	}
	var report map[string]any
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("dnsviz grok's JSON: %v\n%s", err, out)
	}
	var problems []string
	walkDNSViz(report, "", &problems)
	for _, p := range problems {
		t.Errorf("dnsviz: %s", p)
	}
	if z, _ := report[dns.Fqdn(zone)].(map[string]any); z == nil || z["status"] != "NOERROR" {
		t.Errorf("dnsviz: %s has no NOERROR status:\n%s", zone, out)
	}
	if t.Failed() || os.Getenv("DNSVIZ_SHOW") != "" {
		t.Logf("dnsviz grok:\n%s", out)
	}
}

// pygraphvizRelease returns a directory for PYTHONPATH whose sitecustomize gives pygraphviz the
// release module dnsviz 0.9.4 (Debian 12) checks its version with, which pygraphviz 1.7
// (Debian 12) no longer has: without it, dnsviz grok refuses to run.
func pygraphvizRelease(t *testing.T, dir string) string {
	t.Helper()
	site := filepath.Join(dir, "pysite")
	if err := os.MkdirAll(site, 0o755); err != nil {
		t.Fatal(err)
	}
	const shim = `import sys, types
try:
    import pygraphviz
    if not hasattr(pygraphviz, "release"):
        release = types.ModuleType("pygraphviz.release")
        release.version = pygraphviz.__version__
        pygraphviz.release = release
        sys.modules["pygraphviz.release"] = release
except ImportError:
    pass
`
	if err := os.WriteFile(filepath.Join(site, "sitecustomize.py"), []byte(shim), 0o644); err != nil {
		t.Fatal(err)
	}
	return site
}

// walkDNSViz appends to problems each error and warning dnsviz grok reports in v (at path),
// and each status that says a validation failed or was not secure.
func walkDNSViz(v any, path string, problems *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, sub := range x {
			switch {
			case k == "errors" || k == "warnings":
				if list, ok := sub.([]any); ok && len(list) > 0 {
					*problems = append(*problems, fmt.Sprintf("%s %s: %v", path, k, list))
				}
			case k == "status" && slices.Contains([]any{"INSECURE", "BOGUS", "INDETERMINATE", "INVALID", "EXPIRED", "PREMATURE"}, sub):
				*problems = append(*problems, fmt.Sprintf("%s: %v", path, sub))
			default:
				walkDNSViz(sub, path+"/"+k, problems)
			}
		}
	case []any:
		for i, sub := range x {
			walkDNSViz(sub, fmt.Sprintf("%s[%d]", path, i), problems)
		}
	}
}

// zonemasterDNSSEC runs zonemaster-cli's DNSSEC tests (Debian's) on zone from h's root: it must
// report no ERROR or WARNING but those the loopback test bed causes.
func zonemasterDNSSEC(t *testing.T, dir string, h *testutil.Hierarchy, zone string) {
	bin, err := exec.LookPath("zonemaster-cli")
	if err != nil {
		t.Skip("zonemaster-cli is not installed (Debian package zonemaster-cli; make deps installs it)")
	}
	hints := filepath.Join(dir, "zonemaster.hints")
	if err := os.WriteFile(hints, []byte(h.RootHints()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--hints", hints, "--no-ipv6", "--level", "WARNING", "--json", "--no-progress", "--test", "DNSSEC", zone)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("zonemaster-cli: %v\n%s", err, out)
	}
	var findings []struct{ Level, Module, Tag, Testcase string }
	if err := json.Unmarshal(out[strings.IndexByte(string(out), '['):], &findings); err != nil {
		t.Fatalf("zonemaster-cli's JSON: %v\n%s", err, out)
	}
	for _, f := range findings {
		if !zmEnvironment[f.Tag] {
			t.Errorf("zonemaster: %s %s %s %s", f.Level, f.Module, f.Testcase, f.Tag)
		}
	}
	t.Logf("zonemaster: %d findings at WARNING or above, all of the loopback test bed", len(findings))
}
