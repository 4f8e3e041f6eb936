// Package traces exports OpenTelemetry traces (a publisher, traces_endpoint): the OpenTelemetry
// Go SDK's tracer provider, with a batching OTLP/gRPC exporter to the configured collector,
// made the process's (otel.SetTracerProvider) while it runs. Meridian's parts beside the query
// path start their spans from otel's global provider (otel.Tracer("meridian/PART")): the
// failover timelines (a change from its first failed probe to its first answer, its steps as
// child spans), the reloads, the Redis pipelines of cluster mode, the sites' peer rounds, the
// RFC 2136 updates of the heartbeats and the Kubernetes source's refreshes. Without this
// publisher the global provider is OpenTelemetry's no-op, and the query path has no span.
package traces

import (
	"context"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/meridian-gslb/meridian/internal/config"
)

// shutdownWait bounds how long Stop waits for the last spans to be exported.
const shutdownWait = 5 * time.Second

// Logger is where the exporter reports its errors.
type Logger interface {
	Warningf(format string, args ...any)
}

// Exporter is the tracer provider of the process, while it runs.
type Exporter struct {
	opts     config.TracesOptions
	log      Logger
	mu       sync.Mutex
	provider *sdktrace.TracerProvider
}

// New returns the exporter o asks for. It starts nothing: Start does.
func New(o config.TracesOptions, log Logger) *Exporter { return &Exporter{opts: o, log: log} }

// Name implements publish.Publisher.
func (x *Exporter) Name() string { return "traces" }

// Start makes a tracer provider exporting to the collector the process's. The connection is
// made in the background; spans that cannot be sent are dropped (the SDK's queue is bounded).
func (x *Exporter) Start() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.provider != nil {
		return
	}
	opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(x.opts.Endpoint), otlptracegrpc.WithTimeout(shutdownWait)}
	if x.opts.Insecure {
		opts = append(opts, otlptracegrpc.WithInsecure())
	}
	exp, err := otlptracegrpc.New(context.Background(), opts...)
	if err != nil {
		x.log.Warningf("traces: no exporter to %s: %v", x.opts.Endpoint, err)
		return
	}
	host, _ := os.Hostname()
	res := resource.NewSchemaless(attribute.String("service.name", x.opts.ServiceName()), attribute.String("host.name", host))
	x.provider = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Second)),
		sdktrace.WithResource(res), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	otel.SetTracerProvider(x.provider)
}

// Stop exports what is queued, within a few seconds, and gives the process the no-op provider
// back.
func (x *Exporter) Stop() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.provider == nil {
		return
	}
	if otel.GetTracerProvider() == x.provider {
		otel.SetTracerProvider(noop.NewTracerProvider())
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownWait)
	defer cancel()
	if err := x.provider.Shutdown(ctx); err != nil {
		x.log.Warningf("traces: the last spans to %s: %v", x.opts.Endpoint, err)
	}
	x.provider = nil
}
