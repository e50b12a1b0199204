package daemon

import (
	"fmt"
	"log/slog"

	"github.com/minicri/minicri/config"
	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/hook"
	"github.com/minicri/minicri/nri"
	"github.com/minicri/minicri/sandbox"
	"github.com/minicri/minicri/server"
)

// The NRI adapter implements the domain's hook interfaces.
var (
	_ sandbox.Hooks   = (*nri.NRI)(nil)
	_ container.Hooks = (*nri.NRI)(nil)
)

// nriHooks is NRI when enabled; its socket opens once the managers exist
// (startNRI).
type nriHooks struct{ n *nri.NRI }

func newNRI(cfg config.NRI, log *slog.Logger) (nriHooks, error) {
	if !cfg.Enable {
		log.Info("NRI disabled")
		return nriHooks{}, nil
	}
	reg, req := cfg.Timeouts()
	n, err := nri.New(nri.Options{
		SocketPath: cfg.SocketPath, PluginPath: cfg.PluginPath, PluginConfigPath: cfg.PluginConfigPath,
		RegistrationTimeout: reg, RequestTimeout: req, Version: server.RuntimeVersion,
		Validator: validatorOptions(cfg.DefaultValidator), Log: log,
	})
	if err != nil {
		return nriHooks{}, err
	}
	return nriHooks{n}, nil
}

// validatorOptions are the NRI default validator's options of the config.
func validatorOptions(v config.NRIValidator) nri.ValidatorOptions {
	var o nri.ValidatorOptions
	o.Enable = v.Enable
	o.RejectOCIHookAdjustment = v.RejectOCIHookAdjustment
	o.RejectRuntimeDefaultSeccompAdjustment = v.RejectRuntimeDefaultSeccompAdjustment
	o.RejectUnconfinedSeccompAdjustment = v.RejectUnconfinedSeccompAdjustment
	o.RejectCustomSeccompAdjustment = v.RejectCustomSeccompAdjustment
	o.RejectNamespaceAdjustment = v.RejectNamespaceAdjustment
	o.RejectSysctlAdjustment = v.RejectSysctlAdjustment
	o.RequiredPlugins = v.RequiredPlugins
	o.TolerateMissingAnnotation = v.TolerateMissingPluginsAnnotation
	o.RejectHostMounts = v.RejectHostMountAdjustment
	o.RejectDevices = v.RejectDeviceAdjustment
	return o
}

func (h nriHooks) sandbox() sandbox.Hooks {
	if h.n == nil {
		return nil
	}
	return h.n
}

func (h nriHooks) container() container.Hooks {
	if h.n == nil {
		return nil
	}
	return h.n
}

// start opens the NRI socket; stop (returned) closes it.
func (h nriHooks) start(cfg config.NRI, sandboxes *sandbox.Manager, containers *container.Manager, log *slog.Logger) (stop func(), err error) {
	if h.n == nil {
		return func() {}, nil
	}
	if err := h.n.Start(nriPods{sandboxes}, nriContainers{containers}); err != nil {
		return nil, fmt.Errorf("start NRI: %w", err)
	}
	log.Info("NRI listening", "socket", cfg.SocketPath, "plugin_path", cfg.PluginPath)
	return h.n.Stop, nil
}

// nriPods is the sandbox manager as NRI reads it.
type nriPods struct{ m *sandbox.Manager }

func (p nriPods) Pod(id string) (hook.Pod, error) {
	info, err := p.m.Get(id)
	if err != nil {
		return hook.Pod{}, fmt.Errorf("pod for NRI: %w", err)
	}
	return info.Hook(), nil
}

func (p nriPods) Pods() []hook.Pod {
	infos := p.m.List(sandbox.Filter{})
	out := make([]hook.Pod, len(infos))
	for i, info := range infos {
		out[i] = info.Hook()
	}
	return out
}

// nriContainers is the container manager as NRI reads and changes it.
type nriContainers struct{ *container.Manager }

func (c nriContainers) Containers() []hook.Container {
	infos := c.List(container.Filter{})
	out := make([]hook.Container, len(infos))
	for i, info := range infos {
		out[i] = info.Hook()
	}
	return out
}
