// Package iptables is the API of sigs.k8s.io/iptables-wrappers/pkg/iptables as Kubernetes
// v1.38.0-beta.0 calls it (its only callers here: pkg/kubelet/kubelet_network_linux.go,
// cmd/kube-proxy/app/server_linux.go, pkg/proxy/iptables, pkg/proxy/ipvs), written for
// minicri's test builds on top of Kubernetes v1.37.2's pkg/util/iptables, which 1.38 moved
// into that module. test/e2e/tools/iptables-wrappers.sh copies that package from the module
// cache into ../../internal/legacy; nothing of it is kept in minicri's repository.
//
// The 1.38 callers differ from 1.37's in: a context first on every call; Restore(ctx, data)
// in place of RestoreAll(data, NoFlushTables, RestoreCounters) (the only flags 1.37's
// callers passed, RestoreAll or Restore of a table whose data names it); New returning the
// error 1.37's callers got from Present; NewBestEffort keyed by Protocol ("IPv4"/"IPv6",
// the values of v1.IPFamily); Monitor stopping with its context; and a Mode argument.
//
// Mode: this stand-in runs the installed iptables/ip6tables(-save/-restore) in both modes,
// as 1.37 did. UseInstalledMode (the kubelet's) means exactly that. DetectHostMode (kube-
// proxy's) is, by its name and by what the iptables-wrappers project does, the choice
// between the legacy and nft backends that matches the host's rules, for a kube-proxy whose
// own iptables may differ from the host's (its container image). On a host where kube-proxy
// runs the host's own iptables and the kubelet made its chains with that same iptables (the
// 1.38 kubelet uses UseInstalledMode), as in test/cluster, both choices are the installed
// iptables; this stand-in does not detect anything.
package iptables

import (
	"bytes"
	"context"
	"time"

	"k8s.io/utils/set"
	"sigs.k8s.io/iptables-wrappers/internal/legacy"
)

// Mode selects which iptables binaries an Interface runs (see the package comment).
type Mode int

const (
	// UseInstalledMode runs the iptables binaries installed on the host.
	UseInstalledMode Mode = iota
	// DetectHostMode: upstream, the backend the host's rules use; here the installed one.
	DetectHostMode
)

// The types and constants are 1.37's.
type (
	RulePosition = legacy.RulePosition
	Protocol     = legacy.Protocol
	Table        = legacy.Table
	Chain        = legacy.Chain
	ParseError   = legacy.ParseError
	LineData     = legacy.LineData
)

const (
	Prepend          = legacy.Prepend
	Append           = legacy.Append
	ProtocolIPv4     = legacy.ProtocolIPv4
	ProtocolIPv6     = legacy.ProtocolIPv6
	TableNAT         = legacy.TableNAT
	TableFilter      = legacy.TableFilter
	TableMangle      = legacy.TableMangle
	ChainPostrouting = legacy.ChainPostrouting
	ChainPrerouting  = legacy.ChainPrerouting
	ChainOutput      = legacy.ChainOutput
	ChainInput       = legacy.ChainInput
	ChainForward     = legacy.ChainForward
)

// Interface is 1.37's with a context on each call (checked before the call runs: 1.37's
// runner does not pass it to the iptables process) and 1.38's Restore and Monitor.
type Interface interface {
	EnsureChain(ctx context.Context, table Table, chain Chain) (bool, error)
	FlushChain(ctx context.Context, table Table, chain Chain) error
	DeleteChain(ctx context.Context, table Table, chain Chain) error
	ChainExists(ctx context.Context, table Table, chain Chain) (bool, error)
	EnsureRule(ctx context.Context, position RulePosition, table Table, chain Chain, args ...string) (bool, error)
	DeleteRule(ctx context.Context, table Table, chain Chain, args ...string) error
	IsIPv6() bool
	Protocol() Protocol
	SaveInto(ctx context.Context, table Table, buffer *bytes.Buffer) error
	// Restore runs iptables-restore --noflush --counters with data (whole tables, each
	// starting with its "*table" line, as iptables-save writes them).
	Restore(ctx context.Context, data []byte) error
	// Monitor is 1.37's, stopped when ctx is done instead of by a channel.
	Monitor(ctx context.Context, canary Chain, tables []Table, reloadFunc func(), interval time.Duration)
}

type runner struct{ r legacy.Interface }

// New returns an Interface for protocol, or the error of 1.37's Present (iptables missing
// or not supported by the kernel).
func New(ctx context.Context, protocol Protocol, _ Mode) (Interface, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := legacy.New(protocol)
	if err := r.Present(); err != nil {
		return nil, err
	}
	return &runner{r}, nil
}

// NewBestEffort returns an Interface for each protocol New supports (none: an empty map).
func NewBestEffort(ctx context.Context, mode Mode) map[Protocol]Interface {
	m := map[Protocol]Interface{}
	for _, p := range []Protocol{ProtocolIPv4, ProtocolIPv6} {
		if ipt, err := New(ctx, p, mode); err == nil {
			m[p] = ipt
		}
	}
	return m
}

func (x *runner) EnsureChain(ctx context.Context, table Table, chain Chain) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return x.r.EnsureChain(table, chain)
}

func (x *runner) FlushChain(ctx context.Context, table Table, chain Chain) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return x.r.FlushChain(table, chain)
}

func (x *runner) DeleteChain(ctx context.Context, table Table, chain Chain) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return x.r.DeleteChain(table, chain)
}

func (x *runner) ChainExists(ctx context.Context, table Table, chain Chain) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return x.r.ChainExists(table, chain)
}

func (x *runner) EnsureRule(ctx context.Context, position RulePosition, table Table, chain Chain, args ...string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return x.r.EnsureRule(position, table, chain, args...)
}

func (x *runner) DeleteRule(ctx context.Context, table Table, chain Chain, args ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return x.r.DeleteRule(table, chain, args...)
}

func (x *runner) IsIPv6() bool { return x.r.IsIPv6() }

func (x *runner) Protocol() Protocol { return x.r.Protocol() }

func (x *runner) SaveInto(ctx context.Context, table Table, buffer *bytes.Buffer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return x.r.SaveInto(table, buffer)
}

func (x *runner) Restore(ctx context.Context, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return x.r.RestoreAll(data, legacy.NoFlushTables, legacy.RestoreCounters)
}

func (x *runner) Monitor(ctx context.Context, canary Chain, tables []Table, reloadFunc func(), interval time.Duration) {
	x.r.Monitor(canary, tables, reloadFunc, interval, ctx.Done())
}

// GetChainsFromTable is 1.37's, returning a k8s.io/utils/set (1.38's proxier takes its
// Difference with one) instead of an apimachinery sets.Set.
func GetChainsFromTable(save []byte) set.Set[Chain] {
	return set.New(legacy.GetChainsFromTable(save).UnsortedList()...)
}

// The other helpers are 1.37's.
var (
	MakeChainLine   = legacy.MakeChainLine
	ExtractLines    = legacy.ExtractLines
	IsNotFoundError = legacy.IsNotFoundError
)
