// Package ocirt is the OCI runtime that runs a pod's containers: the
// built-in libcontainer (in-process, the default RuntimeClass handler "")
// or an external OCI runtime binary (runc, crun, ...) named by a
// `[runtimes.<name>]` config table. The pod's monitor creates, starts,
// signals and deletes containers through it and stays their parent (a
// child subreaper); the daemon execs into them, updates, stats and, when
// no monitor answers, kills and deletes them through it.
//
// Imports: the standard library, runc's libcontainer, the OCI runtime-spec and
// minicri's internal/ helpers (and cgdriver). It must never import a domain
// package (container, sandbox, network, image, monitor), server, daemon or gRPC.
package ocirt
