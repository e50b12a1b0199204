// Package stats reads the resource usage the CRI reports of containers and
// pods: a cgroup's CPU, memory, swap, page faults and pressure as the kubelet
// and cAdvisor mean them on either cgroup version (Usage), the CPU rate
// between two reads (Rates), the CRI metrics of one container read in one
// pass over its cgroup and processes (Sample), and the caches that bound how
// often a sample is read and a writable layer walked (Cache).
//
// It sees cgroups, PIDs and directories, never a container: container/
// names them, owns the records and hands the results to the server.
//
// Imports: the standard library, opencontainers/cgroups and, of the
// project, only cgdriver. It must never import container/, sandbox/ or
// another domain package, the CRI edge (server, streaming, daemon) or gRPC.
package stats
