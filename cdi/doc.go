// Package cdi resolves Container Device Interface (CDI) device names into
// edits of a container's OCI spec (device nodes and their device cgroup
// rules, mounts, environment, hooks) with the CNCF container-device-interface
// library. Specs are read from root-owned spec directories (by default
// /etc/cdi and /var/run/cdi), cached, and refreshed when the directories
// change.
//
// Imports: the standard library, the CNCF CDI library, the OCI runtime-spec and
// minicri's internal/ helpers. It must never import another package of the
// project outside internal/, nor gRPC.
package cdi
