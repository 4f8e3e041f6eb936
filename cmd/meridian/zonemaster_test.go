package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// The loopback addresses of the zonemaster test's delegation: a root and the org zone served
// by CoreDNS's file plugin (one process), and the gslb zone example.org (two addresses of one
// meridian). Zonemaster asks name servers on port 53 only.
const (
	zmRoot, zmOrg  = "127.0.53.1", "127.0.53.2"
	zmNS1, zmNS2   = "127.0.53.3", "127.0.53.4"
	zonemasterTime = 2 * time.Minute
)

// zmEnvironment are the findings that the loopback test bed causes, not Meridian: its name
// servers' addresses are loopback ones.
var zmEnvironment = map[string]bool{"NAMESERVER_IP_PRIVATE_NETWORK": true}

// TestZonemaster runs zonemaster-cli (Debian's) against a complete gslb zone delegated on
// loopback: a small root (with the name servers' reverse names) and org zone served by the
// file plugin in a second process, and --hints pointing at the root. It requires no ERROR or
// WARNING but those the loopback addresses cause; a zone whose NS set disagrees with its
// delegation shows that the run finds what is wrong.
func TestZonemaster(t *testing.T) {
	zonemaster, err := exec.LookPath("zonemaster-cli")
	if err != nil {
		t.Skip("zonemaster-cli is not installed (Debian package zonemaster-cli; make deps installs it)")
	}
	if os.Geteuid() != 0 {
		t.Skip("zonemaster asks name servers on port 53, which only root may bind")
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	root := write("root.zone", fmt.Sprintf(`$ORIGIN .
@ 86400 IN SOA ns.root. hostmaster.root. 2026120101 1800 900 604800 86400
@ 518400 IN NS ns.root.
ns.root. 518400 IN A %s
org. 172800 IN NS ns.org-servers.root.
ns.org-servers.root. 172800 IN A %s
%s 3600 IN PTR ns1.example.org.
%s 3600 IN PTR ns2.example.org.
`, zmRoot, zmOrg, reverseName(zmNS1), reverseName(zmNS2)))
	org := write("org.zone", fmt.Sprintf(`$ORIGIN org.
@ 3600 IN SOA ns.org-servers.root. hostmaster.org-servers.root. 2026120101 1800 900 604800 3600
@ 3600 IN NS ns.org-servers.root.
example 3600 IN NS ns1.example.org.
example 3600 IN NS ns2.example.org.
ns1.example 3600 IN A %s
ns2.example 3600 IN A %s
`, zmNS1, zmNS2))
	hints := write("hints", fmt.Sprintf(".  3600000  NS  ns.root.\nns.root.  3600000  A  %s\n", zmRoot))
	testutil.StartAt(t, dir, zmRoot+":53", fmt.Sprintf(". {\n bind %s\n file %s .\n}\norg {\n bind %s\n file %s org\n}\n", zmRoot, root, zmOrg, org), 15*time.Second)

	for _, tt := range []struct {
		name, ns string
		want     string // a finding the run must report; "" for none but the environment's
	}{
		{"complete zone", "[ns1.example.org., ns2.example.org.]", ""},
		{"NS set disagrees with the delegation", "[ns1.example.org.]", "EXTRA_NAME_PARENT"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			zdir := t.TempDir()
			zone := filepath.Join(zdir, "example.org.yml")
			if err := os.WriteFile(zone, []byte(fmt.Sprintf(`soa: {mname: ns1.example.org., rname: hostmaster.example.org.}
ns: %s
static:
  "@": ["MX 10 mail", "TXT \"v=spf1 mx -all\"", "CAA 0 issue \"letsencrypt.org\""]
  ns1: ["A %s"]
  ns2: ["A %s"]
  mail: ["A 192.0.2.25"]
records:
  example.org.: {backends: [{address: 192.0.2.10}, {address: 192.0.2.11}]}
  www.example.org.: {backends: [{address: 192.0.2.10}, {address: 192.0.2.11}]}
`, tt.ns, zmNS1, zmNS2)), 0o644); err != nil {
				t.Fatal(err)
			}
			srv := testutil.StartAt(t, zdir, zmNS1+":53", fmt.Sprintf("example.org {\n bind %s %s\n gslb %s\n}\n", zmNS1, zmNS2, zone), 15*time.Second)
			cmd := exec.Command(zonemaster, "--hints", hints, "--no-ipv6", "--level", "WARNING", "--json", "--no-progress", "example.org")
			cmd.Dir = zdir
			done := make(chan struct{})
			var out []byte
			go func() { out, err = cmd.CombinedOutput(); close(done) }()
			select {
			case <-done:
			case <-time.After(zonemasterTime):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("zonemaster-cli ran longer than %s:\n%s", zonemasterTime, out)
			}
			if err != nil {
				t.Fatalf("zonemaster-cli: %v\n%s", err, out)
			}
			var findings []struct{ Level, Module, Tag, Testcase string }
			if err := json.Unmarshal(out[strings.IndexByte(string(out), '['):], &findings); err != nil {
				t.Fatalf("zonemaster-cli's JSON: %v\n%s", err, out)
			}
			found := false
			for _, f := range findings {
				switch {
				case f.Tag == tt.want:
					found = true
				case !zmEnvironment[f.Tag] && tt.want == "":
					t.Errorf("zonemaster: %s %s %s %s\nmeridian:\n%s", f.Level, f.Module, f.Testcase, f.Tag, srv.Logs())
				}
			}
			if tt.want != "" && !found {
				t.Errorf("zonemaster did not report %s: %s", tt.want, out)
			}
		})
	}
}

// reverseName returns the in-addr.arpa name of the IPv4 address a.
func reverseName(a string) string {
	p := strings.Split(a, ".")
	return p[3] + "." + p[2] + "." + p[1] + "." + p[0] + ".in-addr.arpa."
}
