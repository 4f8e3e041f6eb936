package timeline

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// traceTimeline exports t as a span from its evidence to its first answer (to its last step
// when it has none), with a child span for each step and an event for each other site or
// instance that learned it: the span that links a health change to its first changed answer.
// Without a tracer provider (traces_endpoint) it costs a no-op span.
func traceTimeline(t *Timeline) {
	tr := otel.Tracer("meridian/timeline")
	end := t.Answered
	for _, x := range []time.Time{t.Swapped, t.Changed} {
		if end.IsZero() {
			end = x
		}
	}
	ctx, span := tr.Start(context.Background(), "health change to first answer", trace.WithTimestamp(t.Detected),
		trace.WithAttributes(attribute.String("gslb.record", t.Record), attribute.String("gslb.backend", t.Key),
			attribute.String("gslb.from", t.From.String()), attribute.String("gslb.to", t.To.String()),
			attribute.String("gslb.reason", t.Reason), attribute.Float64("gslb.failover_target_seconds", t.Target.Seconds())))
	step := func(name string, from, to time.Time) {
		if !from.IsZero() && !to.IsZero() {
			_, s := tr.Start(ctx, name, trace.WithTimestamp(from))
			s.End(trace.WithTimestamp(to))
		}
	}
	step("detect", t.Detected, t.Changed)
	step("swap", t.Changed, t.Swapped)
	step("answer", t.Swapped, t.Answered)
	for _, l := range t.Learned {
		span.AddEvent("learned", trace.WithTimestamp(l.At), trace.WithAttributes(attribute.String("gslb.by", l.By)))
	}
	switch {
	case t.Superseded:
		span.SetStatus(codes.Unset, "superseded by a later change")
	case t.Answered.IsZero():
		span.SetStatus(codes.Error, "no answer within the wait")
	}
	span.End(trace.WithTimestamp(end))
}
