package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// restartWith restarts the (pod-less) instance with extra config.
func (i *instance) restartWith(t *testing.T, extra string) {
	t.Helper()
	i.stop()
	f, err := os.OpenFile(filepath.Join(i.dir, "config.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("\n" + extra + "\n")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	i.start()
}

var metricsAddrRE = regexp.MustCompile(`"msg":"metrics serving","address":"([^"]+)"`)

// metricsURL is the endpoint's URL from the daemon's last "metrics serving"
// line (the config asks for port 0).
func (i *instance) metricsURL(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(i.dir, "minicri.log"))
	if err != nil {
		t.Fatal(err)
	}
	m := metricsAddrRE.FindAllStringSubmatch(string(b), -1)
	if len(m) == 0 {
		t.Fatalf("no metrics serving line; log:\n%s", i.logTail())
	}
	return "http://" + m[len(m)-1][1] + "/metrics"
}

func scrapeTelemetry(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %d %v", resp.StatusCode, err)
	}
	return string(body)
}

// promValue is the value of the one series whose line starts with prefix.
func promValue(t *testing.T, text, prefix string) float64 {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok && strings.HasPrefix(rest, " ") {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return v
		}
	}
	t.Fatalf("no series %s", prefix)
	return 0
}

const runtimeSvc = `service="runtime.v1.RuntimeService"`

// The endpoint shows each CRI call the daemon served with its latency
// histogram and code, the steps of RunPodSandbox and CreateContainer, the
// pull, and pods and containers by state.
func TestTelemetryMetricsEndpoint(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.restartWith(t, "[metrics]\naddress = \"127.0.0.1:0\"")
	url := i.metricsURL(t)
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "telemetry")
	_, info := i.status(t, podID)
	i.run(t, podID, pod, ctrConfig("sleeper", "sleep 1000"))
	if _, err := i.rt.ContainerStatus(ctx(t), &runtimeapi.ContainerStatusRequest{ContainerId: "nosuch"}); status.Code(err) != codes.NotFound {
		t.Fatalf("ContainerStatus of nothing: %v", err)
	}

	text := scrapeTelemetry(t, url)
	for _, m := range []string{"RunPodSandbox", "CreateContainer", "StartContainer", "PodSandboxStatus"} {
		if n := promValue(t, text, fmt.Sprintf(`minicri_grpc_request_duration_seconds_count{code="OK",method=%q,%s}`, m, runtimeSvc)); n < 1 {
			t.Errorf("%s: %v calls", m, n)
		}
		promValue(t, text, fmt.Sprintf(`minicri_grpc_request_duration_seconds_bucket{code="OK",method=%q,%s,le="+Inf"}`, m, runtimeSvc))
	}
	promValue(t, text, fmt.Sprintf(`minicri_grpc_requests_total{code="NotFound",method="ContainerStatus",%s}`, runtimeSvc))
	promValue(t, text, `minicri_grpc_requests_total{code="OK",method="PullImage",service="runtime.v1.ImageService"}`)
	for _, s := range []string{`operation="RunPodSandbox",step="cni add"`, `operation="RunPodSandbox",step="start monitor and pause"`,
		`operation="RunPodSandbox",step="record intent"`, `operation="CreateContainer",step="mount rootfs"`,
		`operation="CreateContainer",step="create in monitor"`} {
		if n := promValue(t, text, "minicri_step_duration_seconds_count{"+s+"}"); n != 1 {
			t.Errorf("step %s: count %v, want 1", s, n)
		}
	}
	if v := promValue(t, text, `minicri_pods{state="ready"}`); v != 1 {
		t.Errorf("ready pods: %v", v)
	}
	if v := promValue(t, text, `minicri_containers{state="running"}`); v != 1 {
		t.Errorf("running containers: %v", v)
	}
	if v := promValue(t, text, `minicri_image_pull_bytes_total`); v < 1<<20 {
		t.Errorf("pull bytes: %v", v)
	}
	promValue(t, text, `minicri_image_pulls_total{result="success"}`)
	promValue(t, text, `process_resident_memory_bytes`)
	if v := promValue(t, text, `minicri_pod_monitors_lost`); v != 0 {
		t.Errorf("monitors lost before any was killed: %v", v)
	}

	// A pod whose monitor is killed counts as lost (and not ready); one
	// stopped through the CRI does not.
	lostID := i.runPod(t, podConfig("telemetry-lost"))
	_, lostInfo := i.status(t, lostID)
	if err := syscall.Kill(lostInfo.MonitorPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	text = scrapeTelemetry(t, url)
	if v := promValue(t, text, `minicri_pod_monitors_lost`); v != 1 {
		t.Errorf("monitors lost after a kill: %v", v)
	}
	if v := promValue(t, text, `minicri_pods{state="notready"}`); v != 1 {
		t.Errorf("notready pods after a kill: %v", v)
	}
	if _, err := i.rt.StopPodSandbox(ctx(t), &runtimeapi.StopPodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatal(err)
	}
	if v := promValue(t, scrapeTelemetry(t, url), `minicri_pod_monitors_lost`); v != 1 {
		t.Errorf("monitors lost after a CRI stop of another pod: %v", v)
	}
	i.stopRemove(t, podID)
	i.stopRemove(t, lostID)
	i.assertNothingLeft(t, map[string]podInfo{podID: info, lostID: lostInfo})
}

// otlpCollector is an OTLP/gRPC trace receiver.
type otlpCollector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (c *otlpCollector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			c.spans = append(c.spans, ss.Spans...)
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// With [tracing] set, RunPodSandbox reaches an OTLP collector as a server
// span with a child span per step.
func TestTelemetryTracesReachCollector(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	col := &otlpCollector{}
	g := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(g, col)
	go g.Serve(ln)
	defer g.Stop()

	i := newInstance(t)
	i.restartWith(t, fmt.Sprintf("[tracing]\nendpoint = \"http://%s\"\nsampling_rate = 1.0", ln.Addr()))
	podID := i.runPod(t, podConfig("traced"))
	_, info := i.status(t, podID)
	i.stopRemove(t, podID)
	i.assertNothingLeft(t, map[string]podInfo{podID: info})
	i.stop() // flushes the batch; cleanup finds the daemon stopped

	col.mu.Lock()
	defer col.mu.Unlock()
	var call *tracepb.Span
	for _, s := range col.spans {
		if s.Name == "runtime.v1.RuntimeService/RunPodSandbox" {
			call = s
		}
	}
	if call == nil {
		t.Fatalf("no RunPodSandbox span among %d", len(col.spans))
	}
	if call.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("call span kind %v", call.Kind)
	}
	children := map[string]bool{}
	for _, s := range col.spans {
		if string(s.ParentSpanId) == string(call.SpanId) && string(s.TraceId) == string(call.TraceId) {
			children[s.Name] = true
		}
	}
	for _, step := range []string{"record intent", "pin netns", "network and pause", "publish ready"} {
		if !children[step] {
			t.Errorf("no child span %q of RunPodSandbox; children: %v", step, children)
		}
	}
	var network []byte
	for _, s := range col.spans {
		if s.Name == "network and pause" && string(s.ParentSpanId) == string(call.SpanId) {
			network = s.SpanId
		}
	}
	found := false
	for _, s := range col.spans {
		found = found || (s.Name == "cni add" && network != nil && string(s.ParentSpanId) == string(network))
	}
	if !found {
		t.Error("no span for the cni add part under network and pause")
	}
}
