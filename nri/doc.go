// Package nri is minicri's NRI adapter: it connects minicri to NRI plugins
// (the Node Resource Interface) through containerd's nri adaptation.
// Plugins register on a unix socket (or are started from the plugin
// directory), are synchronized with the pods and containers that exist,
// hear every lifecycle event, may adjust containers as they are created
// and update or evict containers at any time. A validator (NRI's default
// validator and minicri's checks, validator.go) and any validation plugins
// may refuse a container's adjustment.
//
// It holds: the adaptation and its options (nri.go), the pod and container
// events (pods.go, containers.go), plugin synchronization, updates and
// evictions (sync.go), the conversion of minicri's pods and containers to
// NRI's (convert.go), the application of adjustments to an OCI spec
// (adjust.go, generator.go) and the validator (validator.go).
//
// It sits above the domain: *NRI implements sandbox.Hooks and
// container.Hooks by their method sets, over the plain values of package
// hook, and reads and changes pods and containers through its own Pods and
// Containers interfaces; daemon/ wires it in (and asserts that it
// implements both Hooks). It must never import container/, sandbox/ or any
// other domain package of minicri (server, daemon, image, network,
// monitor, ...): of the project it imports only hook.
package nri
