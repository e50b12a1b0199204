package config

import (
	"fmt"
	"net"
	"net/url"
)

// Metrics configures the Prometheus endpoint.
type Metrics struct {
	// Address is where /metrics is served ("127.0.0.1:9090"; port 0: a
	// free one, logged as "metrics serving"); empty: no endpoint.
	Address string `toml:"address"`
}

// Tracing configures OpenTelemetry traces of the CRI calls.
type Tracing struct {
	// Endpoint is an OTLP/gRPC collector's URL ("http://127.0.0.1:4317";
	// https for TLS); empty: no tracing at all.
	Endpoint string `toml:"endpoint"`
	// SamplingRate is the fraction of calls traced, 0 to 1, unless the
	// caller's trace context decides.
	SamplingRate float64 `toml:"sampling_rate"`
	// ServiceName is the traces' service.name.
	ServiceName string `toml:"service_name"`
}

func (c Config) validateTelemetry() error {
	if a := c.Metrics.Address; a != "" {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("config: metrics.address must be host:port, got %q", a)
		}
	}
	t := c.Tracing
	if t.Endpoint == "" {
		return nil
	}
	u, err := url.Parse(t.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("config: tracing.endpoint must be an http:// or https:// URL, got %q", t.Endpoint)
	}
	if t.SamplingRate < 0 || t.SamplingRate > 1 {
		return fmt.Errorf("config: tracing.sampling_rate must be between 0 and 1, got %v", t.SamplingRate)
	}
	if t.ServiceName == "" {
		return fmt.Errorf("config: tracing.service_name must not be empty")
	}
	return nil
}
