package daemon

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"testing"

	"github.com/minicri/minicri/config"
)

// Unconfigured, telemetry installs nothing: no observer, no interceptor
// beyond the server's own, no goroutine.
func TestTelemetryOffInstallsNothing(t *testing.T) {
	before := runtime.NumGoroutine()
	o, err := newObservability(context.Background(), config.Default(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if o.tel != nil || o.metrics != nil || o.tp != nil || o.pullObserver() != nil {
		t.Fatalf("telemetry on: %+v", o)
	}
	if n := len(o.serverOptions(nil, nil)); n != 2 {
		t.Fatalf("%d server options, want the server's two interceptors", n)
	}
	if err := o.serveMetrics(nil, nil); err != nil || o.srv != nil {
		t.Fatalf("metrics server started: %v", err)
	}
	if after := runtime.NumGoroutine(); after != before {
		t.Fatalf("goroutines %d -> %d", before, after)
	}
	if err := o.stop(); err != nil {
		t.Fatal(err)
	}
}

// Configured, the tracer provider exports in the background and stops.
func TestTelemetryOnStartsAndStops(t *testing.T) {
	cfg := config.Default()
	cfg.Metrics.Address = "127.0.0.1:0"
	cfg.Tracing.Endpoint = "http://127.0.0.1:1"
	o, err := newObservability(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if o.tel == nil || o.metrics == nil || o.tp == nil || o.pullObserver() == nil {
		t.Fatalf("telemetry off: %+v", o)
	}
	if err := o.stop(); err != nil {
		t.Fatal(err)
	}
}
