package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tap "github.com/dnstap/golang-dnstap"
	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// answerLogZone has records the fast path answers (failover from a worse priority, once its
// first backend's check failed; a host name; over TCP) and ECS; their TXT answers (enable_txt)
// are the chain's.
const answerLogZone = `records:
  www.example.org.:
    mode: failover
    backends:
      - {address: 192.0.2.10, priority: 1, healthchecks: [{type: exec, params: {command: /bin/false}}]}
      - {address: 192.0.2.11, priority: 2}
  hashed.example.org.: {mode: ip-hash, backends: [{address: 192.0.2.20}, {address: 192.0.2.21}]}
  alias.example.org.: {backends: [{address: www.example.net.}]}
  tcp.example.org.: {backends: [{address: 192.0.2.30}]}
`

// tapped is one response frame of the answer log, as the test reads it.
type tapped struct {
	question string
	port     uint32
	tcp      bool
	decision map[string]any
}

// TestAnswerLogEndToEnd runs meridian with the fast path and answer_log, its dnstap plugin
// writing to the Go dnstap tool, and requires: a response frame for each answer, of the fast
// path (no client port) over UDP and TCP and of the chain alike, each carrying its decision in
// the extra field and its transport;
// the file readable by BIND's dnstap-read and by `meridian answers`; the answers counted.
func TestAnswerLogEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "zone.yml"), []byte(answerLogZone), 0o644); err != nil {
		t.Fatal(err)
	}
	collector := testutil.StartDnstapCollector(t, dir)
	metrics := testutil.FreePort(t)
	srv := testutil.Start(t, dir, func(port int) string {
		return fmt.Sprintf(`.:%d {
 bind 127.0.0.1
 prometheus 127.0.0.1:%d
 metadata
 dnstap unix://%s full {
  identity meridian-test
  extra "{/gslb/decision}"
 }
 gslb {
  zone example.org. %s
  use_edns_csubnet
  enable_txt
  fastpath 1
  answer_log
 }
}
`, port, metrics, collector.Socket, filepath.Join(dir, "zone.yml"))
	})
	testutil.Eventually(t, 10*time.Second, func() bool {
		r := srv.Query(t, "udp", "www.example.org.", dns.TypeA)
		return len(r.Answer) == 1 && strings.Contains(r.Answer[0].String(), "192.0.2.11")
	}, "www.example.org. does not fail over:\n%s", srv.Logs())

	ecs := new(dns.Msg)
	ecs.SetQuestion("hashed.example.org.", dns.TypeA)
	ecs.SetEdns0(1232, false)
	ecs.IsEdns0().Option = []dns.EDNS0{&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: net.ParseIP("198.51.100.0").To4()}}
	srv.Exchange(t, "udp", ecs)
	srv.Query(t, "udp", "alias.example.org.", dns.TypeA)
	srv.Query(t, "udp", "none.example.org.", dns.TypeA)
	srv.Query(t, "udp", "hashed.example.org.", dns.TypeTXT)
	srv.Query(t, "tcp", "tcp.example.org.", dns.TypeA)

	// The frames reach the tool within the plugin's flush (a second); each rotation closes a
	// complete file.
	var files []string
	byName := map[string]tapped{}
	testutil.Eventually(t, 15*time.Second, func() bool {
		f := collector.Rotate(t)
		files = append(files, f)
		for _, frame := range testutil.ReadDnstapFile(t, f) {
			if got, ok := responseFrame(t, frame); ok {
				byName[got.question] = got
			}
		}
		for _, q := range []string{"www.example.org. A", "hashed.example.org. A", "alias.example.org. A", "none.example.org. A", "hashed.example.org. TXT", "tcp.example.org. A"} {
			if _, ok := byName[q]; !ok {
				return false
			}
		}
		return true
	}, "the answer log lacks responses: %v", byName)

	www := byName["www.example.org. A"]
	if www.port != 0 || www.tcp || www.decision["record"] != "www.example.org." || www.decision["failover"] != true ||
		fmt.Sprint(www.decision["backends"]) != "[192.0.2.11]" {
		t.Errorf("the fast path's frame of www: port %d, decision %v", www.port, www.decision)
	}
	hashed := byName["hashed.example.org. A"]
	if hashed.port != 0 || hashed.decision["mode"] != "ip-hash" || hashed.decision["client"] != "198.51.100.0/24" || hashed.decision["scope"] != float64(24) {
		t.Errorf("the fast path's frame of an ECS query: port %d, decision %v", hashed.port, hashed.decision)
	}
	alias := byName["alias.example.org. A"]
	if alias.port != 0 || alias.decision["record"] != "alias.example.org." || fmt.Sprint(alias.decision["backends"]) != "[www.example.net.]" {
		t.Errorf("the fast path's frame of a host-name record: port %d, decision %v", alias.port, alias.decision)
	}
	if none := byName["none.example.org. A"]; none.port != 0 || none.decision["kind"] != "nxdomain" {
		t.Errorf("the fast path's frame of NXDOMAIN: port %d, decision %v", none.port, none.decision)
	}
	if txt := byName["hashed.example.org. TXT"]; txt.port == 0 || txt.tcp || txt.decision["kind"] != "record" || txt.decision["record"] != "hashed.example.org." {
		t.Errorf("the chain's frame of a record's TXT: port %d, TCP %v, decision %v", txt.port, txt.tcp, txt.decision)
	}
	if tcp := byName["tcp.example.org. A"]; tcp.port != 0 || !tcp.tcp || fmt.Sprint(tcp.decision["backends"]) != "[192.0.2.30]" {
		t.Errorf("the fast path's frame of a query over TCP: port %d, TCP %v, decision %v", tcp.port, tcp.tcp, tcp.decision)
	}

	// Standard tools read the file: BIND's dnstap-read, and ours prints the decisions.
	var read strings.Builder
	for _, f := range files {
		out, err := exec.Command("dnstap-read", "-y", f).CombinedOutput()
		if err != nil {
			t.Fatalf("dnstap-read -y %s: %v\n%s", f, err, out)
		}
		read.Write(out)
	}
	if out := read.String(); !strings.Contains(out, "none.example.org") || !strings.Contains(out, "identity: meridian-test") {
		t.Errorf("dnstap-read -y of %d files:\n%s", len(files), out)
	}
	lines, err := testutil.Command(t, append([]string{"answers"}, files...)...)
	if err != nil || !strings.Contains(lines, `"decision":{"kind":"nxdomain"}`) || !strings.Contains(lines, `"record":"www.example.org."`) ||
		!strings.Contains(lines, `"client":"127.0.0.1:0","protocol":"TCP","question":"tcp.example.org. A"`) {
		t.Errorf("meridian answers: %v\n%s", err, lines)
	}

	page := string(metricsPage(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics)))
	if !strings.Contains(page, `coredns_gslb_answer_log_entries_total{result="written"}`) ||
		strings.Contains(page, `coredns_gslb_answer_log_entries_total{result="written"} 0`) {
		t.Errorf("the fast path's answers are not counted written:\n%s", grepLines(page, "answer_log"))
	}
}

// responseFrame returns what frame says of a response: its question, client port, transport
// and decision.
func responseFrame(t *testing.T, frame *tap.Dnstap) (tapped, bool) {
	t.Helper()
	m := frame.GetMessage()
	if m.GetType() != tap.Message_CLIENT_RESPONSE {
		return tapped{}, false
	}
	var resp dns.Msg
	if err := resp.Unpack(m.GetResponseMessage()); err != nil || len(resp.Question) != 1 {
		t.Fatalf("a response frame without its message: %v", err)
	}
	got := tapped{question: resp.Question[0].Name + " " + dns.TypeToString[resp.Question[0].Qtype], port: m.GetQueryPort(),
		tcp: m.GetSocketProtocol() == tap.SocketProtocol_TCP}
	if len(frame.GetExtra()) == 0 {
		return got, true // not gslb's answer: the readiness probe's name
	}
	if err := json.Unmarshal(frame.GetExtra(), &got.decision); err != nil {
		t.Fatalf("the extra field of %s is no decision: %q", got.question, frame.GetExtra())
	}
	return got, true
}

// TestAnswerLogNeedsItsPlugins: answer_log without the metadata plugin, or without a dnstap
// plugin, stops the server from starting with an error that says what to add.
func TestAnswerLogNeedsItsPlugins(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "zone.yml"), []byte(answerLogZone), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ plugins, want string }{
		{"dnstap unix://" + filepath.Join(dir, "none.sock"), "through the metadata plugin"},
		{"metadata", "no dnstap plugin"},
	} {
		corefile := filepath.Join(dir, "Corefile")
		port := testutil.FreePort(t)
		body := fmt.Sprintf(".:%d {\n bind 127.0.0.1\n %s\n gslb {\n  zone example.org. %s\n  answer_log\n }\n}\n", port, tt.plugins, filepath.Join(dir, "zone.yml"))
		if err := os.WriteFile(corefile, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(testutil.Binary(t), "-conf", corefile)
		done := make(chan struct{})
		var out []byte
		go func() { out, _ = cmd.CombinedOutput(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("with %s, meridian started", tt.plugins)
		}
		if !strings.Contains(string(out), tt.want) {
			t.Errorf("with %s: %s, want %q", tt.plugins, out, tt.want)
		}
	}
}
