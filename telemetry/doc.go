// Package telemetry is what an operator sees of minicri besides its log: a
// Prometheus endpoint (gRPC calls, the steps of RunPodSandbox and
// CreateContainer, image pulls, pods and containers by state) and
// OpenTelemetry traces of each CRI call with a span per step. Everything is
// built on demand by the daemon: nothing is registered at package init, and
// with neither configured nothing of it runs (the monitor, the same binary
// re-executed, never pays for it).
//
// Imports: the standard library, Prometheus, OpenTelemetry and gRPC (it
// intercepts the CRI calls) and minicri's internal/ helpers. It must never
// import a domain package (container, sandbox, network, image, monitor) or server.
package telemetry
