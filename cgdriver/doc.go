// Package cgdriver is minicri's cgroup driver: it names the cgroups of pods
// and containers, and makes their managers, with systemd (transient scopes in
// slices, over D-Bus) or directly in cgroupfs, on cgroup v1 or v2.
//
// A cgroup path names its driver: "/parent/name" is a cgroupfs path;
// "parent.slice:minicri:name" (runc's notation) is the systemd scope
// minicri-name.scope in parent.slice. Records keep their paths, so a pod
// created under one driver is still found, measured and removed after a
// restart under the other.
//
// Imports: the standard library, runc's cgroup libraries, go-systemd's D-Bus
// client and minicri's internal/ helpers. It must never import another package
// of the project outside internal/, nor gRPC.
package cgdriver
