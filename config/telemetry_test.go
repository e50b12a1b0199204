package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTelemetryDefaultsOff(t *testing.T) {
	c := Default()
	if c.Metrics.Address != "" || c.Tracing.Endpoint != "" {
		t.Fatalf("telemetry on by default: %+v %+v", c.Metrics, c.Tracing)
	}
}

func TestTelemetryKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.toml")
	data := "[metrics]\naddress = \"127.0.0.1:0\"\n[tracing]\nendpoint = \"http://127.0.0.1:4317\"\nsampling_rate = 0.5\nservice_name = \"node-1\"\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Metrics.Address != "127.0.0.1:0" || c.Tracing.SamplingRate != 0.5 || c.Tracing.ServiceName != "node-1" {
		t.Fatalf("%+v %+v", c.Metrics, c.Tracing)
	}
}

func TestTelemetryValidation(t *testing.T) {
	for name, mod := range map[string]func(*Config){
		"metrics.address":       func(c *Config) { c.Metrics.Address = "9090" },
		"tracing.endpoint":      func(c *Config) { c.Tracing.Endpoint = "127.0.0.1:4317" },
		"tracing.sampling_rate": func(c *Config) { c.Tracing.Endpoint = "http://x:4317"; c.Tracing.SamplingRate = 2 },
		"tracing.service_name":  func(c *Config) { c.Tracing.Endpoint = "http://x:4317"; c.Tracing.ServiceName = "" },
	} {
		c := Default()
		mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}
