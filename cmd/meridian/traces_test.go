package main

import (
	"bytes"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/admin/admintest"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestTracesEndToEnd: with traces_endpoint, meridian exports over OTLP/gRPC, to a minimal
// collector, the span that links the primary's failure to the first answer without it (with
// its detect, swap and answer steps as children, in order) and a reload's span.
func TestTracesEndToEnd(t *testing.T) {
	t.Parallel()
	collector := testutil.StartOTLPReceiver(t)
	primary, secondary := startSite(t, "127.0.0.1"), startSite(t, "127.0.0.2")
	zone := strings.Replace(wwwZone(primary, secondary), "        fall: 1\n", "        fall: 2\n", 1)
	s := startWithAPI(t, zone, filepath.Join(t.TempDir(), "overrides.json"), "traces_endpoint "+collector.Addr, "traces_insecure")
	s.waitState(t, primaryKey, admin.StateUp)
	s.waitState(t, secondaryKey, admin.StateUp)
	primary.fail()
	s.waitAnswer(t, "127.0.0.2")
	if code, body := admintest.Call(t, http.DefaultClient, "POST", s.url+"/api/v1/reload", ""); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}

	var change *tracepb.Span
	byName := map[string][]*tracepb.Span{}
	testutil.Eventually(t, 15*time.Second, func() bool {
		byName = map[string][]*tracepb.Span{}
		for _, sp := range collector.Spans() {
			byName[sp.GetName()] = append(byName[sp.GetName()], sp)
		}
		for _, sp := range byName["health change to first answer"] {
			if attr(sp, "gslb.backend") == primaryKey && attr(sp, "gslb.to") == "down" {
				change = sp
			}
		}
		return change != nil && len(byName["reload"]) > 0
	}, "the collector has no failover and reload spans: %v", spanNames{collector})

	var last uint64
	for _, step := range []string{"detect", "swap", "answer"} {
		var child *tracepb.Span
		for _, sp := range byName[step] {
			if bytes.Equal(sp.GetTraceId(), change.GetTraceId()) && bytes.Equal(sp.GetParentSpanId(), change.GetSpanId()) {
				child = sp
			}
		}
		if child == nil {
			t.Fatalf("no %s child of the change's span", step)
		}
		if child.GetStartTimeUnixNano() < last || child.GetEndTimeUnixNano() < child.GetStartTimeUnixNano() {
			t.Errorf("%s: %d..%d, after %d", step, child.GetStartTimeUnixNano(), child.GetEndTimeUnixNano(), last)
		}
		last = child.GetEndTimeUnixNano()
	}
	if last != change.GetEndTimeUnixNano() || attr(change, "gslb.record") != "www.example.org." {
		t.Errorf("the change's span ends at %d, its answer at %d; record %q", change.GetEndTimeUnixNano(), last, attr(change, "gslb.record"))
	}
}

// attr returns the string attribute key of sp.
func attr(sp *tracepb.Span, key string) string {
	for _, a := range sp.GetAttributes() {
		if a.GetKey() == key {
			return a.GetValue().GetStringValue()
		}
	}
	return ""
}

// spanNames prints the names of the spans a collector received when a failure is formatted.
type spanNames struct{ r *testutil.OTLPReceiver }

func (s spanNames) String() string {
	var names []string
	for _, sp := range s.r.Spans() {
		names = append(names, sp.GetName())
	}
	return strings.Join(names, ", ")
}
