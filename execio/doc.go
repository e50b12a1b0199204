// Package execio holds the daemon's ends of an exec's stdio: for a
// streaming exec (Session), the pipes or the terminal the process gets,
// copying to and from the client's streams, terminal resizes, and the
// drain of its output once it exited; for ExecSync (Capture), its stdout
// and stderr kept up to a cap, the rest read and dropped.
//
// container/ finds the container, starts the process through its OCI
// runtime and waits for it; this package sees only the ocirt.ExecSpec and
// ocirt.Process.
//
// Imports: the standard library, x/sys/unix and, of the project, only
// ocirt. It must never import container/ or another domain package, the CRI
// edge (server, streaming, daemon) or gRPC.
package execio
