package answer

import (
	"encoding/json"
	"testing"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/health"
)

// decisionZone has a record of each kind of decision: a mode's choice, failover from a worse
// priority, a fallback, a degraded answer, a chain's step, ECS.
const decisionZone = `
soa: {mname: ns1.example.org., rname: hostmaster.example.org., serial: 1}
ns: [ns1.example.org.]
static:
  mail: ["A 192.0.2.25"]
healthcheck_profiles:
  tcp80: {type: tcp, params: {port: 80}}
records:
  www.example.org.:
    mode: failover
    backends:
      - {address: 10.0.0.1, priority: 1, healthchecks: [tcp80]}
      - {address: 10.0.0.2, priority: 2, healthchecks: [tcp80]}
  specific.example.org.:
    fallback_policy: {mode: fail-specific, fallback_ips: [192.0.2.1]}
    backends:
      - {address: 10.5.0.1, healthchecks: [tcp80]}
  closed.example.org.:
    fallback_policy: {mode: fail-closed, rcode: REFUSED}
    backends:
      - {address: 10.4.0.1, healthchecks: [tcp80]}
  stale.example.org.:
    backends:
      - {address: 10.6.0.1, healthchecks: [tcp80]}
  chain.example.org.:
    mode: chain
    chain: [priority, roundrobin]
    backends:
      - {address: 10.7.0.1, priority: 1}
      - {address: 10.7.0.2, priority: 1}
      - {address: 10.7.0.3, priority: 2}
  hashed.example.org.:
    mode: ip-hash
    backends:
      - {address: 10.1.0.1}
      - {address: 10.1.0.2}
`

// TestDecide checks what the answer log says decided each kind of answer, and that deciding
// neither turns a rotation nor changes the answer.
func TestDecide(t *testing.T) {
	snap, hs := snapshotOf(t, "decide.yml", decisionZone)
	hs.set(t, snap, "www.example.org.", "10.0.0.1", health.Down)
	hs.set(t, snap, "www.example.org.", "10.0.0.2", health.Up)
	hs.set(t, snap, "specific.example.org.", "10.5.0.1", health.Down)
	hs.set(t, snap, "closed.example.org.", "10.4.0.1", health.Down)
	hs.set(t, snap, "stale.example.org.", "10.6.0.1", health.Stale)
	opts := Options{UseECS: true}
	scope := func(n int) *int { return &n }
	tests := []struct {
		name  string
		query *dns.Msg
		want  Decision
	}{
		{"failover from a worse priority", question("www.example.org.", dns.TypeA),
			Decision{Kind: KindRecord, Record: "www.example.org.", Mode: "failover", Backends: []string{"10.0.0.2"}, Failover: true}},
		{"fail-specific", question("specific.example.org.", dns.TypeA),
			Decision{Kind: KindRecord, Record: "specific.example.org.", Mode: "failover", Backends: []string{"192.0.2.1"}, Fallback: "fail-specific"}},
		{"fail-closed", question("closed.example.org.", dns.TypeA),
			Decision{Kind: KindRecord, Record: "closed.example.org.", Mode: "failover", Fallback: "fail-closed"}},
		{"degraded", question("stale.example.org.", dns.TypeA),
			Decision{Kind: KindRecord, Record: "stale.example.org.", Mode: "failover", Backends: []string{"10.6.0.1"}, Degraded: true}},
		{"a chain's deciding step", question("chain.example.org.", dns.TypeA),
			Decision{Kind: KindRecord, Record: "chain.example.org.", Mode: "chain", Step: "roundrobin"}},
		{"ECS: the client and the scope", ecsQuery("hashed.example.org.", dns.TypeA, subnet(1, 24, "198.51.100.0")),
			Decision{Kind: KindRecord, Record: "hashed.example.org.", Mode: "ip-hash", Client: "198.51.100.0/24", Scope: scope(24)}},
		{"a type the mode does not choose", question("www.example.org.", dns.TypeTXT),
			Decision{Kind: KindRecord, Record: "www.example.org.", Mode: "failover"}},
		{"static data", question("mail.example.org.", dns.TypeA), Decision{Kind: KindZone}},
		{"the apex", question("example.org.", dns.TypeSOA), Decision{Kind: KindZone}},
		{"NXDOMAIN", question("none.example.org.", dns.TypeA), Decision{Kind: KindNXDomain}},
		{"a transfer", question("example.org.", dns.TypeAXFR), Decision{Kind: KindError}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := Query{Msg: tt.query, Source: testClient}
			m, _ := Respond(snap, opts, q)
			if m == nil {
				t.Fatal("no answer")
			}
			got := Decide(snap, opts, q, m)
			if tt.want.Mode == "chain" || tt.want.Mode == "ip-hash" {
				tt.want.Backends = answerTargets(m, tt.query.Question[0].Name) // chosen per query
				if len(tt.want.Backends) == 0 {
					t.Fatalf("answered %v", m)
				}
			}
			gotJSON, _ := json.Marshal(got)
			wantJSON, _ := json.Marshal(tt.want)
			if string(gotJSON) != string(wantJSON) {
				t.Errorf("Decide = %s\nwant     %s", gotJSON, wantJSON)
			}
			if appended := got.AppendJSON(nil); string(appended) != string(gotJSON) {
				t.Errorf("AppendJSON = %s\nencoding/json %s", appended, gotJSON)
			}
			again, _ := Respond(snap, opts, q)
			if tt.want.Step == "roundrobin" && again.Answer[0].String() == m.Answer[0].String() {
				t.Errorf("the rotation did not turn between two answers: %v", again.Answer)
			}
		})
	}
}

// question returns a query for name and qtype.
func question(name string, qtype uint16) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	return m
}

// TestDecisionJSONEscapes: what AppendJSON writes is valid JSON whatever a name holds.
func TestDecisionJSONEscapes(t *testing.T) {
	d := Decision{Kind: KindRecord, Record: "a\"b\\c\x01.example.org.", Backends: []string{"x\ty."}}
	var back Decision
	if err := json.Unmarshal(d.AppendJSON(nil), &back); err != nil || back.Record != d.Record || back.Backends[0] != d.Backends[0] {
		t.Errorf("AppendJSON wrote %s: %v, read back %+v", d.AppendJSON(nil), err, back)
	}
}
