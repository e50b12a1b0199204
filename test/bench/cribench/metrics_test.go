package main

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const sample = `# HELP minicri_step_duration_seconds Duration of each named step.
# TYPE minicri_step_duration_seconds histogram
minicri_step_duration_seconds_bucket{operation="CreateContainer",step="write spec",le="0.001"} 3
minicri_step_duration_seconds_sum{operation="CreateContainer",step="write spec"} 0.003
minicri_step_duration_seconds_count{operation="CreateContainer",step="write spec"} 3
minicri_step_duration_seconds_sum{operation="RunPodSandbox",step="cni add"} 0.5
minicri_step_duration_seconds_count{operation="RunPodSandbox",step="cni add"} 10
minicri_grpc_requests_total{method="Version"} 4
`

func TestScrapeSteps(t *testing.T) {
	body := sample
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, body) }))
	defer srv.Close()
	before, err := scrapeSteps(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 2 {
		t.Fatalf("got %d steps, want 2: %v", len(before), before)
	}
	if m := before["RunPodSandbox/cni add"].MeanMs(); math.Abs(m-50) > 1e-9 {
		t.Errorf("cni add mean = %v ms, want 50", m)
	}
	body = sample + `minicri_step_duration_seconds_sum{operation="CreateContainer",step="create in monitor"} 0.04
minicri_step_duration_seconds_count{operation="CreateContainer",step="create in monitor"} 2
`
	body = strings.Replace(body, `step="cni add"} 0.5`, `step="cni add"} 0.8`, 1)
	body = strings.Replace(body, `step="cni add"} 10`, `step="cni add"} 13`, 1)
	after, err := scrapeSteps(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	d := diffSteps(before, after)
	if _, ok := d["CreateContainer/write spec"]; ok {
		t.Errorf("a step without new samples is in the difference: %v", d)
	}
	if m := d["RunPodSandbox/cni add"].MeanMs(); d["RunPodSandbox/cni add"].Count != 3 || math.Abs(m-100) > 1e-6 {
		t.Errorf("cni add difference = %+v (mean %v ms), want 3 samples of 100 ms", d["RunPodSandbox/cni add"], m)
	}
	if m := d["CreateContainer/create in monitor"].MeanMs(); math.Abs(m-20) > 1e-9 {
		t.Errorf("new step mean = %v ms, want 20", m)
	}
}

func TestScrapeStepsNone(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "minicri_grpc_requests_total 1\n")
	}))
	defer srv.Close()
	if _, err := scrapeSteps(srv.URL); err == nil {
		t.Fatal("no step series: want an error")
	}
}
