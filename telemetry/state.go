package telemetry

import "github.com/prometheus/client_golang/prometheus"

// Counts is what the daemon's managers hold at one moment.
type Counts struct {
	// Pods and Containers count them by state ("ready", "running"...).
	Pods, Containers map[string]int
	// PodsLost are ready pods whose pause or monitor has died (the pod
	// reads as not ready; the kubelet recreates it).
	PodsLost int
	// ExitsLost are containers that ended while their pod's monitor was
	// gone, so that their exit code is unknown.
	ExitsLost int
}

// StateFunc reads the managers' lists; it is called at each scrape.
type StateFunc func() Counts

// stateCollector turns a StateFunc into gauges at scrape time, so that
// nothing on the pod and container paths keeps them up to date.
type stateCollector struct {
	read                 StateFunc
	pods, ctrs, lost, ex *prometheus.Desc
}

func newStateCollector(read StateFunc) *stateCollector {
	return &stateCollector{
		read: read,
		pods: prometheus.NewDesc(namespace+"_pods", "Pod sandboxes by state.", []string{"state"}, nil),
		ctrs: prometheus.NewDesc(namespace+"_containers", "Containers by state.", []string{"state"}, nil),
		lost: prometheus.NewDesc(namespace+"_pod_monitors_lost",
			"Pods recorded ready whose pause or monitor process has died.", nil, nil),
		ex: prometheus.NewDesc(namespace+"_container_exits_lost",
			"Containers that ended while their pod's monitor was gone (exit code unknown).", nil, nil),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pods
	ch <- c.ctrs
	ch <- c.lost
	ch <- c.ex
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.read()
	for state, v := range n.Pods {
		ch <- prometheus.MustNewConstMetric(c.pods, prometheus.GaugeValue, float64(v), state)
	}
	for state, v := range n.Containers {
		ch <- prometheus.MustNewConstMetric(c.ctrs, prometheus.GaugeValue, float64(v), state)
	}
	ch <- prometheus.MustNewConstMetric(c.lost, prometheus.GaugeValue, float64(n.PodsLost))
	ch <- prometheus.MustNewConstMetric(c.ex, prometheus.GaugeValue, float64(n.ExitsLost))
}
