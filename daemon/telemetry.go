package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"

	"github.com/minicri/minicri/config"
	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/image"
	"github.com/minicri/minicri/internal/steps"
	"github.com/minicri/minicri/sandbox"
	"github.com/minicri/minicri/telemetry"
)

// observability is the metrics endpoint and the traces, each only when
// configured: with neither, tel is nil and nothing of it is installed (no
// interceptor, no step observer, no exporter, no goroutine).
type observability struct {
	cfg     config.Config
	log     *slog.Logger
	tel     *telemetry.Telemetry
	metrics *telemetry.Metrics
	tp      *sdktrace.TracerProvider
	srv     *telemetry.Server
}

func newObservability(ctx context.Context, cfg config.Config, log *slog.Logger) (*observability, error) {
	o := &observability{cfg: cfg, log: log}
	opts := telemetry.Options{}
	if cfg.Metrics.Address != "" {
		o.metrics = telemetry.NewMetrics()
		opts.Metrics = o.metrics
	}
	if t := cfg.Tracing; t.Endpoint != "" {
		tp, err := telemetry.NewTracerProvider(ctx, telemetry.TracingConfig{
			Endpoint: t.Endpoint, SamplingRate: t.SamplingRate, ServiceName: t.ServiceName}, log)
		if err != nil {
			return nil, err
		}
		o.tp, opts.Tracer = tp, tp
		log.Info("tracing", "endpoint", t.Endpoint, "sampling_rate", t.SamplingRate, "service_name", t.ServiceName)
	}
	if o.tel = telemetry.New(opts); o.tel != nil {
		steps.SetObserver(o.tel)
	}
	return o, nil
}

// pullObserver is what the image store reports pulls to (nil when off).
func (o *observability) pullObserver() image.PullObserver {
	if o.metrics == nil {
		return nil
	}
	return o.tel
}

// serveMetrics starts the endpoint, with pods and containers by state
// read from the managers at each scrape.
func (o *observability) serveMetrics(sandboxes *sandbox.Manager, containers *container.Manager) error {
	if o.metrics == nil {
		return nil
	}
	o.metrics.WatchState(func() telemetry.Counts { return countState(sandboxes, containers) })
	srv, err := telemetry.Serve(o.cfg.Metrics.Address, o.metrics, o.log)
	o.srv = srv
	return err
}

// serverOptions puts the telemetry interceptors outside the server's own,
// so they see the gRPC code the client gets.
func (o *observability) serverOptions(unary grpc.UnaryServerInterceptor, stream grpc.StreamServerInterceptor) []grpc.ServerOption {
	if o.tel == nil {
		return []grpc.ServerOption{grpc.UnaryInterceptor(unary), grpc.StreamInterceptor(stream)}
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(o.tel.UnaryInterceptor, unary),
		grpc.ChainStreamInterceptor(o.tel.StreamInterceptor, stream),
	}
}

// stop closes the endpoint and flushes the spans not yet exported, for at
// most 2 s (a collector that is down must not hold up a shutdown).
func (o *observability) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var errs []error
	if o.srv != nil {
		errs = append(errs, o.srv.Stop(ctx))
	}
	if o.tp != nil {
		if err := o.tp.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("tracing: flush at shutdown: %w", err))
		}
	}
	if o.tel != nil {
		steps.SetObserver(nil)
	}
	return errors.Join(errs...)
}

func countState(sandboxes *sandbox.Manager, containers *container.Manager) telemetry.Counts {
	n := telemetry.Counts{Pods: map[string]int{}, Containers: map[string]int{}}
	for _, s := range []sandbox.State{sandbox.StateCreating, sandbox.StateReady, sandbox.StateNotReady, sandbox.StateRemoving} {
		n.Pods[string(s)] = 0
	}
	for _, s := range []container.State{container.StateCreating, container.StateCreated, container.StateRunning, container.StateExited, container.StateRemoving} {
		n.Containers[string(s)] = 0
	}
	for _, p := range sandboxes.List(sandbox.Filter{}) {
		st := p.Status
		n.Pods[string(st.State)]++
		// Only StopPodSandbox records notready, with the time: one without
		// it was ready until its pause or monitor died.
		if st.State == sandbox.StateNotReady && st.StoppedAt.IsZero() {
			n.PodsLost++
		}
	}
	for _, c := range containers.List(container.Filter{}) {
		n.Containers[string(c.Status.State)]++
		if c.Status.Reason == container.ReasonUnknown {
			n.ExitsLost++
		}
	}
	return n
}

func logIf(log *slog.Logger, what string, err error) {
	if err != nil {
		log.Warn(what, "err", err)
	}
}
