package gslb

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/metadata"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/answer"
	"github.com/meridian-gslb/meridian/internal/answerlog"
	"github.com/meridian-gslb/meridian/internal/config"
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

// BenchmarkFastAnswerLog measures a fast-path answer (answer.AppendFast, as the engine's
// handler calls it) with what the block's observer adds to it: nothing with the answer log off
// (no observer), the answer log's queue with it on, complete and sampled one in 100. Every
// side allocates nothing once the queue's slots have grown.
func BenchmarkFastAnswerLog(b *testing.B) {
	q := new(dns.Msg)
	q.SetQuestion("www.example.org.", dns.TypeA)
	pkt, err := q.Pack()
	if err != nil {
		b.Fatal(err)
	}
	src := netip.MustParseAddr("192.0.2.1")
	for _, c := range []struct {
		name   string
		on     bool
		sample int
	}{{"off", false, 0}, {"on", true, 1}, {"sampled/100", true, 100}} {
		b.Run(c.name, func(b *testing.B) {
			g := newTestGSLBWith(b, nil, func(o *config.Options) {
				// A queue that holds what the answers of 10 ms (the writer's round) queue at
				// 3 million answers a second.
				queue := (1 << 16) / max(c.sample, 1)
				o.FastPath.Enable, o.AnswerLog = true, config.AnswerLogOptions{Enable: c.on, Sample: c.sample, Queue: queue}
			})
			observe := (&fastPaths{g: g}).observer(nil)
			if l := g.Engine.AnswerLog(); l != nil {
				defer l.Attach(func(*answerlog.Entry) {})()
				l.Start()
				defer l.Stop()
			}
			if (observe != nil) != c.on {
				b.Fatalf("answer log %v: an observer %v", c.on, observe != nil)
			}
			dst := make([]byte, 0, 1232)
			answerOne := func() {
				var start time.Time
				if observe != nil {
					start = time.Now()
				}
				resp, ok := answer.AppendFast(dst, g.Engine.Snapshot(), &g.Answer, pkt, src, false, g.Engine.Geo(), time.Time{})
				if !ok {
					b.Fatal("the fast path did not answer")
				}
				if observe != nil {
					observe(pkt, resp, src, false, start)
				}
			}
			for range 1 << 17 {
				answerOne() // the queue's slots grow to the packets' sizes once
			}
			b.ReportAllocs()
			for b.Loop() {
				answerOne()
			}
		})
	}
}
