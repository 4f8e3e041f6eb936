package gslb

import (
	"context"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/metadata"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"
)

// TestDecisionMetadata: with answer_log, a query's gslb/decision is empty until gslb answered
// it, then its decision as JSON; without answer_log, gslb gives no label.
func TestDecisionMetadata(t *testing.T) {
	for _, on := range []bool{false, true} {
		g := newTestGSLB(t, nil)
		g.AnswerLog = on
		ctx := g.Metadata(metadata.ContextWithMetadata(context.Background()), request.Request{})
		decision := metadata.ValueFunc(ctx, decisionLabel)
		if (decision != nil) != on {
			t.Fatalf("answer_log %v: the label is given: %v", on, decision != nil)
		}
		if !on {
			continue
		}
		if got := decision(); got != "" {
			t.Errorf("before the answer, the decision is %q", got)
		}
		q := new(dns.Msg)
		q.SetQuestion("www.example.org.", dns.TypeA)
		if _, err := g.ServeDNS(ctx, newRecorder(false), q); err != nil {
			t.Fatal(err)
		}
		if got := decision(); !strings.HasPrefix(got, `{"kind":"record","record":"www.example.org.","mode":"failover","backends":[`) {
			t.Errorf("the decision is %q", got)
		}
	}
}

// BenchmarkServeDNSAnswerLog measures a query of the plugin chain with answer_log, as the
// dnstap plugin has it: the metadata collected, the answer, and its decision written once.
func BenchmarkServeDNSAnswerLog(b *testing.B) {
	g := newTestGSLB(b, nil)
	g.AnswerLog = true
	q := new(dns.Msg)
	q.SetQuestion("www.example.org.", dns.TypeA)
	w := newRecorder(false)
	b.ReportAllocs()
	for b.Loop() {
		ctx := g.Metadata(metadata.ContextWithMetadata(context.Background()), request.Request{})
		if _, err := g.ServeDNS(ctx, w, q); err != nil {
			b.Fatal(err)
		}
		if metadata.ValueFunc(ctx, decisionLabel)() == "" {
			b.Fatal("no decision")
		}
	}
}
