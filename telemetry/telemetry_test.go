package telemetry

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/minicri/minicri/internal/steps"
)

const runPod = "/runtime.v1.RuntimeService/RunPodSandbox"

// runPodCall serves one RunPodSandbox through the interceptor: two steps,
// the second failing when fail is set.
func runPodCall(t *testing.T, tel *Telemetry, fail bool) error {
	t.Helper()
	steps.SetObserver(tel)
	t.Cleanup(func() { steps.SetObserver(nil) })
	handler := func(ctx context.Context, _ any) (any, error) {
		_, err := steps.Run(ctx, slog.Default(), []steps.Step{
			{Name: "record intent", Do: func(context.Context) error { time.Sleep(time.Millisecond); return nil }},
			{Name: "cni add", Do: func(context.Context) error {
				if fail {
					return status.Error(grpccodes.FailedPrecondition, "no network")
				}
				return nil
			}},
		})
		return nil, err
	}
	_, err := tel.UnaryInterceptor(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: runPod}, handler)
	return err
}

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(m.Registry(), promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

func mustContain(t *testing.T, text string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(text, l) {
			t.Errorf("scrape lacks %q", l)
		}
	}
}

// A scrape shows each call's count and latency histogram by method and
// code, and each step's histogram under its operation.
func TestScrapeShowsCallsAndSteps(t *testing.T) {
	m := NewMetrics()
	tel := New(Options{Metrics: m})
	if err := runPodCall(t, tel, false); err != nil {
		t.Fatal(err)
	}
	if err := runPodCall(t, tel, true); status.Code(err) != grpccodes.FailedPrecondition {
		t.Fatalf("err = %v", err)
	}
	text := scrape(t, m)
	mustContain(t, text,
		`minicri_grpc_requests_total{code="OK",method="RunPodSandbox",service="runtime.v1.RuntimeService"} 1`,
		`minicri_grpc_requests_total{code="FailedPrecondition",method="RunPodSandbox",service="runtime.v1.RuntimeService"} 1`,
		`minicri_grpc_request_duration_seconds_bucket{code="OK",method="RunPodSandbox",service="runtime.v1.RuntimeService",le="+Inf"} 1`,
		`minicri_grpc_request_duration_seconds_count{code="FailedPrecondition",method="RunPodSandbox",service="runtime.v1.RuntimeService"} 1`,
		`minicri_grpc_requests_in_flight{method="RunPodSandbox",service="runtime.v1.RuntimeService"} 0`,
		`minicri_step_duration_seconds_count{operation="RunPodSandbox",step="record intent"} 2`,
		`minicri_step_duration_seconds_count{operation="RunPodSandbox",step="cni add"} 2`,
		`minicri_step_failures_total{operation="RunPodSandbox",step="cni add"} 1`,
		"go_goroutines ", "process_resident_memory_bytes ")
	// The 1 ms step is in no bucket below 1 ms.
	mustContain(t, text, `minicri_step_duration_seconds_bucket{operation="RunPodSandbox",step="record intent",le="0.0008"} 0`)
}

// A call in progress shows in the in-flight gauge.
func TestInFlight(t *testing.T) {
	m := NewMetrics()
	tel := New(Options{Metrics: m})
	inside := make(chan struct{})
	release := make(chan struct{})
	go func() {
		_, _ = tel.UnaryInterceptor(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/runtime.v1.ImageService/PullImage"},
			func(context.Context, any) (any, error) { close(inside); <-release; return nil, nil })
	}()
	<-inside
	mustContain(t, scrape(t, m), `minicri_grpc_requests_in_flight{method="PullImage",service="runtime.v1.ImageService"} 1`)
	close(release)
}

// Pods and containers by state are read from the managers at scrape time.
func TestStateGauges(t *testing.T) {
	n := Counts{Pods: map[string]int{"ready": 2, "notready": 0}, Containers: map[string]int{"running": 3}, PodsLost: 1}
	m := NewMetrics()
	m.WatchState(func() Counts { return n })
	text := scrape(t, m)
	mustContain(t, text, `minicri_pods{state="ready"} 2`, `minicri_pods{state="notready"} 0`,
		`minicri_containers{state="running"} 3`, "minicri_pod_monitors_lost 1", "minicri_container_exits_lost 0")
	n.Containers["running"] = 1
	mustContain(t, scrape(t, m), `minicri_containers{state="running"} 1`)
}

func TestPulls(t *testing.T) {
	m := NewMetrics()
	tel := New(Options{Metrics: m})
	tel.PullDone(1000, 2*time.Second, nil)
	tel.PullDone(24, time.Second, errors.New("unauthorized"))
	mustContain(t, scrape(t, m), "minicri_image_pull_bytes_total 1024",
		`minicri_image_pulls_total{result="success"} 1`, `minicri_image_pulls_total{result="failure"} 1`,
		`minicri_image_pull_duration_seconds_count{result="success"} 1`)
}

// With neither metrics nor tracing there is nothing to install.
func TestOffIsNil(t *testing.T) {
	if tel := New(Options{}); tel != nil {
		t.Fatalf("New(off) = %v", tel)
	}
}

// A traced RunPodSandbox is one server span with a child span per step;
// a failed step and the call carry an error status.
func TestTraceHasStepSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tel := New(Options{Tracer: tp})
	if err := runPodCall(t, tel, true); err == nil {
		t.Fatal("no error")
	}
	spans := rec.Ended()
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = s
	}
	call, ok := byName["runtime.v1.RuntimeService/RunPodSandbox"]
	if !ok || len(spans) != 3 {
		t.Fatalf("spans: %v", names(spans))
	}
	if call.Status().Code != codes.Error || call.Parent().IsValid() {
		t.Errorf("call span: status %v, parent %v", call.Status(), call.Parent())
	}
	for _, step := range []string{"record intent", "cni add"} {
		s, ok := byName[step]
		if !ok {
			t.Fatalf("no span for step %q: %v", step, names(spans))
		}
		if s.Parent().SpanID() != call.SpanContext().SpanID() || s.SpanContext().TraceID() != call.SpanContext().TraceID() {
			t.Errorf("step %q is not a child of the call span", step)
		}
	}
	if byName["cni add"].Status().Code != codes.Error || byName["record intent"].Status().Code == codes.Error {
		t.Errorf("step statuses: %v %v", byName["record intent"].Status(), byName["cni add"].Status())
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

// The endpoint serves the text format on the configured address.
func TestServe(t *testing.T) {
	m := NewMetrics()
	s, err := Serve("127.0.0.1:0", m, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop(context.Background()) }()
	resp, err := http.Get("http://" + s.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "# TYPE go_goroutines gauge") {
		t.Fatalf("status %d body %.300s", resp.StatusCode, body)
	}
}
