package telemetry

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Telemetry observes CRI calls, the steps they run and image pulls, for
// metrics, traces or both.
type Telemetry struct {
	metrics *Metrics
	tracer  trace.Tracer
	prop    propagation.TextMapPropagator
}

// Options says what to feed; a nil field is off.
type Options struct {
	Metrics *Metrics
	// Tracer makes a trace of each CRI call, with a span per step.
	Tracer trace.TracerProvider
}

// New returns the observers for o; nil if o turns everything off, so that
// the daemon installs nothing at all.
func New(o Options) *Telemetry {
	if o.Metrics == nil && o.Tracer == nil {
		return nil
	}
	t := &Telemetry{metrics: o.Metrics}
	if o.Tracer != nil {
		t.tracer = o.Tracer.Tracer("github.com/minicri/minicri")
		t.prop = propagation.TraceContext{}
	}
	return t
}

type operationKey struct{}

// WithOperation names the operation (the CRI method, "RunPodSandbox") whose
// steps run with ctx; the interceptors set it for every call.
func WithOperation(ctx context.Context, op string) context.Context {
	return context.WithValue(ctx, operationKey{}, op)
}

func operation(ctx context.Context) string {
	if op, ok := ctx.Value(operationKey{}).(string); ok {
		return op
	}
	return "none"
}

// StepStarted implements steps.Observer: a span per step, child of the
// call's, and the step's duration in the histogram of its operation.
func (t *Telemetry) StepStarted(ctx context.Context, name string) (context.Context, func(time.Duration, error)) {
	op := operation(ctx)
	var span trace.Span
	if t.tracer != nil {
		ctx, span = t.tracer.Start(ctx, name, trace.WithAttributes(attribute.String("minicri.operation", op)))
	}
	return ctx, func(d time.Duration, err error) {
		if t.metrics != nil {
			t.metrics.stepSeconds.WithLabelValues(op, name).Observe(d.Seconds())
			if err != nil {
				t.metrics.stepFailures.WithLabelValues(op, name).Inc()
			}
		}
		if span != nil {
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}
	}
}

// PullDone records one image pull: the bytes it downloaded, how long it
// took, and whether it failed.
func (t *Telemetry) PullDone(bytes int64, d time.Duration, err error) {
	if t.metrics == nil {
		return
	}
	result := "success"
	if err != nil {
		result = "failure"
	}
	t.metrics.pulls.WithLabelValues(result).Inc()
	t.metrics.pullBytes.Add(float64(bytes))
	t.metrics.pullSeconds.WithLabelValues(result).Observe(d.Seconds())
}

// splitMethod splits "/runtime.v1.RuntimeService/RunPodSandbox".
func splitMethod(full string) (service, method string) {
	full = strings.TrimPrefix(full, "/")
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		return full[:i], full[i+1:]
	}
	return "unknown", full
}
