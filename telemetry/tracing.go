package telemetry

import (
	"context"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TracingConfig says where traces go.
type TracingConfig struct {
	// Endpoint is the OTLP/gRPC collector's URL: "http://host:4317"
	// (plaintext) or "https://host:4317".
	Endpoint string
	// SamplingRate is the fraction of calls traced (0 to 1) when the
	// client did not decide (a traceparent in the call's metadata does).
	SamplingRate float64
	// ServiceName is the traces' service.name.
	ServiceName string
}

// NewTracerProvider exports spans over OTLP/gRPC in batches. The exporter
// connects lazily: a collector that is down costs dropped spans, never a
// failed CRI call, and a warning in the log (OTel's errors go to log as
// JSON lines like the rest). Shutdown flushes what is left.
func NewTracerProvider(ctx context.Context, cfg TracingConfig, log *slog.Logger) (*sdktrace.TracerProvider, error) {
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing: export failed", "err", err) }))
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(cfg.Endpoint))
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter for %s: %w", cfg.Endpoint, err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", cfg.ServiceName))
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SamplingRate))),
	), nil
}
