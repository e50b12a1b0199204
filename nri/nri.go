package nri

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/adaptation/builtin"
	nrilog "github.com/containerd/nri/pkg/log"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/hook"
)

// Options configure NRI.
type Options struct {
	SocketPath          string
	PluginPath          string
	PluginConfigPath    string
	RegistrationTimeout time.Duration
	RequestTimeout      time.Duration
	Version             string // minicri's, told to plugins
	Validator           ValidatorOptions
	Log                 *slog.Logger

	builtins []*builtin.BuiltinPlugin // tests: plugins run in process
}

// Pods is what NRI reads of the sandboxes.
type Pods interface {
	Pod(id string) (hook.Pod, error)
	Pods() []hook.Pod
}

// Containers is what NRI reads and changes of the containers.
type Containers interface {
	Containers() []hook.Container
	AdjustResources(ctx context.Context, id string, adjust func(*specs.LinuxResources) error) error
	Stop(ctx context.Context, id string, timeout time.Duration) error
	// InjectCDIDevices adds CDI devices a plugin's adjustment names.
	InjectCDIDevices(spec *specs.Spec, names []string) error
}

// NRI is minicri's side of NRI.
type NRI struct {
	a       *adaptation.Adaptation
	log     *slog.Logger
	plugins atomic.Int64 // plugins connected and synchronized, the built-in validator included
	// builtins is how many of them are the built-in validator (0 or 1).
	builtins int64
	// required: the validator requires plugins, so creations go through
	// NRI even with no plugin connected. rejectDevices: updates may not
	// allow devices either.
	required, validates, rejectDevices bool
	pods                               Pods
	ctrs                               Containers
}

// New creates the NRI runtime side; Start opens its socket.
func New(opts Options) (*NRI, error) {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	n := &NRI{log: opts.Log.With("component", "nri")}
	nrilog.Set(logger{n.log})
	adaptation.SetPluginRegistrationTimeout(opts.RegistrationTimeout)
	adaptation.SetPluginRequestTimeout(opts.RequestTimeout)
	builtins := opts.builtins
	if v := defaultValidator(opts.Validator); v != nil {
		builtins = append([]*builtin.BuiltinPlugin{v}, builtins...)
		n.builtins, n.validates = 1, true
		n.required = len(opts.Validator.RequiredPlugins) > 0
		n.rejectDevices = opts.Validator.RejectDevices
	}
	n.log.Info("NRI default validator", "enabled", n.validates, "config", opts.Validator)
	a, err := adaptation.New("minicri", opts.Version, n.synchronize, n.updateContainers,
		adaptation.WithSocketPath(opts.SocketPath),
		adaptation.WithPluginPath(opts.PluginPath),
		adaptation.WithPluginConfigPath(opts.PluginConfigPath),
		adaptation.WithBuiltinPlugins(builtins...),
		adaptation.WithMetrics(pluginCount{&n.plugins}))
	if err != nil {
		return nil, fmt.Errorf("nri: %w", err)
	}
	n.a = a
	return n, nil
}

// Start binds NRI to the managers, starts the pre-installed plugins and
// opens the socket for external ones.
func (n *NRI) Start(pods Pods, ctrs Containers) error {
	n.pods, n.ctrs = pods, ctrs
	if err := n.a.Start(); err != nil {
		return fmt.Errorf("nri: %w", err)
	}
	return nil
}

// Stop closes the socket and disconnects the plugins.
func (n *NRI) Stop() { n.a.Stop() }

// Active reports whether a plugin is connected (the built-in validator does
// not count). With none, no event is relayed (nothing is built or sent):
// NRI costs pod and container starts nothing, unless a container's
// creation must be validated for required plugins (mustValidate).
func (n *NRI) Active() bool { return n.plugins.Load() > n.builtins }

// mustValidate reports whether the validator must see a creation even with
// no plugin connected: it requires plugins, globally or by the pod's
// annotations.
func (n *NRI) mustValidate(podID string) bool {
	if !n.validates {
		return false
	}
	if n.required {
		return true
	}
	pod, err := n.pods.Pod(podID)
	return err == nil && needsRequiredPlugins(pod.Annotations)
}

// blockSync holds off the synchronization of a late plugin until release
// is called: what is created meanwhile is either in the sync set or told to
// the plugin as an event, never lost.
func (n *NRI) blockSync() (release func()) {
	b := n.a.BlockPluginSync()
	return b.Unblock
}

// pluginCount tracks how many plugins are connected (the adaptation
// reports it as a metric).
type pluginCount struct{ n *atomic.Int64 }

func (pluginCount) RecordPluginInvocation(string, string, error)      {}
func (pluginCount) RecordPluginLatency(string, string, time.Duration) {}
func (pluginCount) RecordPluginAdjustments(string, string, *adaptation.ContainerAdjustment, int, int) {
}
func (p pluginCount) UpdatePluginCount(count int) { p.n.Store(int64(count)) }

// logger sends the nri library's logs to slog.
type logger struct{ l *slog.Logger }

func (g logger) Debugf(ctx context.Context, f string, a ...any) {
	g.l.DebugContext(ctx, fmt.Sprintf(f, a...))
}
func (g logger) Infof(ctx context.Context, f string, a ...any) {
	g.l.InfoContext(ctx, fmt.Sprintf(f, a...))
}
func (g logger) Warnf(ctx context.Context, f string, a ...any) {
	g.l.WarnContext(ctx, fmt.Sprintf(f, a...))
}
func (g logger) Errorf(ctx context.Context, f string, a ...any) {
	g.l.ErrorContext(ctx, fmt.Sprintf(f, a...))
}
