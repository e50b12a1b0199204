// Package apparmor is minicri's side of the host's AppArmor: whether the
// kernel enforces it, which profiles it has loaded, and minicri's default
// container profile, generated and loaded with apparmor_parser as
// containerd does. Containers get their profile through the OCI spec
// (Process.ApparmorProfile), which libcontainer applies to their init and
// to every exec'd process.
//
// Imports: the standard library and minicri's internal/ helpers only. It must
// never import another package of the project outside internal/, nor gRPC.
package apparmor
