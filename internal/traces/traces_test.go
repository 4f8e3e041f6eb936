package traces

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestExporter: while it runs, the spans of otel's global provider reach the collector (Stop
// sends what is queued); after Stop the global provider records nothing.
func TestExporter(t *testing.T) {
	r := testutil.StartOTLPReceiver(t)
	x := New(config.TracesOptions{Endpoint: r.Addr, Insecure: true, Service: "meridian-test"}, &testutil.Log{})
	x.Start()
	x.Start() // once
	_, span := otel.Tracer("meridian/test").Start(context.Background(), "while running")
	span.End()
	x.Stop()
	x.Stop()
	if got := r.Spans(); len(got) != 1 || got[0].GetName() != "while running" {
		t.Fatalf("received %v", got)
	}
	_, after := otel.Tracer("meridian/test").Start(context.Background(), "after")
	if after.IsRecording() {
		t.Error("a span after Stop is recorded")
	}
	after.End()
}
