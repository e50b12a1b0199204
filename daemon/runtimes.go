package daemon

import (
	"context"
	"log/slog"

	"github.com/minicri/minicri/cgroupmount"
	"github.com/minicri/minicri/config"
	"github.com/minicri/minicri/ocirt"
	"github.com/minicri/minicri/server"
)

// runtimeHandlers makes the RuntimeClass handlers: the built-in "" and
// one per [runtimes.<name>] table, with the features each reports.
func runtimeHandlers(ctx context.Context, cfg config.Config, log *slog.Logger) *ocirt.Handlers {
	bins := make(map[string]*ocirt.Binary, len(cfg.Runtimes))
	for name, r := range cfg.Runtimes {
		bins[name] = &ocirt.Binary{Path: r.Path, Root: cfg.RuntimeRoot(name)}
	}
	hs := ocirt.NewHandlers(ctx, bins)
	for _, h := range hs.List() {
		attrs := []any{"handler", h.Name, "recursive_read_only_mounts", h.Features.RecursiveReadOnlyMounts,
			"user_namespaces", h.Features.UserNamespaces, "cgroup_namespaces", h.Features.CgroupNamespaces}
		if h.Binary != nil {
			attrs = append(attrs, "path", h.Binary.Path, "root", h.Binary.Root)
		}
		log.Info("runtime handler", attrs...)
	}
	return hs
}

// handlerInfo is what Status advertises of the handlers. cgroup_namespaces
// only where the host is cgroup v2 too: minicri refuses CONTAINER on v1.
func handlerInfo(hs *ocirt.Handlers, cg cgroupmount.Host) []server.HandlerInfo {
	var out []server.HandlerInfo
	for _, h := range hs.List() {
		out = append(out, server.HandlerInfo{Name: h.Name,
			RecursiveReadOnlyMounts: h.Features.RecursiveReadOnlyMounts, UserNamespaces: h.Features.UserNamespaces,
			CgroupNamespaces: h.Features.CgroupNamespaces && cg.NamespacesSupported()})
	}
	return out
}
