package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

const namespace = "minicri"

// Bucket bounds, in seconds: a CRI call from 0.25 ms to ~4 min, a step
// from 50 µs to ~55 s, a pull from 50 ms to ~55 min.
var (
	rpcBuckets  = prometheus.ExponentialBuckets(0.00025, 2, 21)
	stepBuckets = prometheus.ExponentialBuckets(0.00005, 2, 21)
	pullBuckets = prometheus.ExponentialBuckets(0.05, 2, 17)
)

// Metrics holds minicri's collectors on a registry of its own.
type Metrics struct {
	reg *prometheus.Registry

	rpcHandled  *prometheus.CounterVec
	rpcSeconds  *prometheus.HistogramVec
	rpcInFlight *prometheus.GaugeVec

	stepSeconds  *prometheus.HistogramVec
	stepFailures *prometheus.CounterVec

	pulls       *prometheus.CounterVec
	pullBytes   prometheus.Counter
	pullSeconds *prometheus.HistogramVec
}

// NewMetrics registers minicri's collectors, the Go runtime's and the
// process's on a new registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		rpcHandled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "grpc", Name: "requests_total",
			Help: "CRI calls completed, by method and gRPC status code.",
		}, []string{"service", "method", "code"}),
		rpcSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "grpc", Name: "request_duration_seconds",
			Help: "Latency of CRI calls, by method and gRPC status code.", Buckets: rpcBuckets,
		}, []string{"service", "method", "code"}),
		rpcInFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "grpc", Name: "requests_in_flight",
			Help: "CRI calls being served, by method.",
		}, []string{"service", "method"}),
		stepSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "step_duration_seconds",
			Help: "Duration of each named step of an operation (RunPodSandbox, CreateContainer), failed or not.", Buckets: stepBuckets,
		}, []string{"operation", "step"}),
		stepFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "step_failures_total",
			Help: "Steps that failed (and were undone), by operation and step.",
		}, []string{"operation", "step"}),
		pulls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "image", Name: "pulls_total",
			Help: "Image pulls, by result (success, failure).",
		}, []string{"result"}),
		pullBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "image", Name: "pull_bytes_total",
			Help: "Bytes downloaded by image pulls (manifests, configs and layers).",
		}),
		pullSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "image", Name: "pull_duration_seconds",
			Help: "Duration of image pulls, by result.", Buckets: pullBuckets,
		}, []string{"result"}),
	}
	m.reg.MustRegister(m.rpcHandled, m.rpcSeconds, m.rpcInFlight, m.stepSeconds, m.stepFailures,
		m.pulls, m.pullBytes, m.pullSeconds,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// WatchState adds gauges of pods and containers by state, read from state
// at each scrape (the managers exist after the image store that reports to
// m, hence a second call).
func (m *Metrics) WatchState(state StateFunc) {
	m.reg.MustRegister(newStateCollector(state))
}

// Registry is where the collectors are (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }
