// Package network gives pods their network: a pinned network namespace per
// pod (NetNS), CNI ADD/DEL through libcni (Manager), and minicri's built-in
// default bridge network with its single static masquerade rule.
//
// The package knows nothing about gRPC; callers map its sentinel errors
// (ErrNotReady, ...) to whatever their protocol needs.
//
// Speed notes (see docs and research/cni-fast-path.md):
//   - `lo` is brought up in-process over netlink; no loopback plugin runs.
//   - The default network uses bridge with ipMasq=false plus one static
//     nftables masquerade rule owned by minicri, so a pod without hostPorts
//     costs no iptables/nft exec at all.
//   - For the default network (see Manager.NetNSNeededForTeardown), callers
//     may remove the pod's netns pin before Teardown, after the pause
//     process is gone: DEL then skips the veth deletion inside the netns (the
//     kernel does it asynchronously) and is two to three times faster. Do not
//     do that for admin configs with per-pod ipMasq, whose rules would leak.
package network
