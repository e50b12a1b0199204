package nri

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/containerd/nri/pkg/adaptation/builtin"
	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/plugin"
	validator "github.com/containerd/nri/plugins/default-validator"
)

// ValidatorOptions configure the built-in default validator, a validation
// plugin that takes part in every CreateContainer after the plugins have
// adjusted it: NRI's own default validator (OCI hooks, seccomp policy,
// namespaces, sysctls, required plugins), then minicri's checks of what
// NRI's leaves alone (host mounts, devices).
type ValidatorOptions struct {
	validator.DefaultValidatorConfig
	// RejectHostMounts refuses every mount a plugin adds but a tmpfs: a
	// bind of a host path, or a kernel filesystem (proc, sysfs, cgroup...).
	RejectHostMounts bool
	// RejectDevices refuses device nodes, device cgroup rules that allow
	// access and host network devices a plugin adds, in adjustments and in
	// updates. CDI devices stay allowed: they name what the node's CDI
	// specs give.
	RejectDevices bool
}

// validatorName is the built-in validator's name, as NRI's own is named.
const validatorName = "00-default-validator"

// defaultValidator is the built-in validation plugin; nil when disabled.
func defaultValidator(opts ValidatorOptions) *builtin.BuiltinPlugin {
	if !opts.Enable {
		return nil
	}
	lib := validator.NewDefaultValidator(&opts.DefaultValidatorConfig)
	own := hostChecks{mounts: opts.RejectHostMounts, devices: opts.RejectDevices}
	return &builtin.BuiltinPlugin{
		Base: "default-validator", Index: "00",
		Handlers: builtin.BuiltinHandlers{
			ValidateContainerAdjustment: func(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) error {
				// The adaptation words the refusal: validator "00-default-validator"
				// rejected container adjustment, reason: <err>.
				if err := lib.ValidateContainerAdjustment(ctx, req); err != nil {
					return err
				}
				return own.validate(req)
			},
		},
	}
}

// hostChecks are minicri's checks of an adjustment, beyond NRI's default
// validator: what would hand the container the host's files or devices.
type hostChecks struct{ mounts, devices bool }

func (h hostChecks) validate(req *api.ValidateContainerAdjustmentRequest) error {
	adj := req.GetAdjust()
	if adj == nil {
		return nil
	}
	if h.mounts {
		if err := checkMounts(req, adj); err != nil {
			return err
		}
	}
	if h.devices {
		if err := checkDevices(req, adj); err != nil {
			return err
		}
		return checkDeviceRules(req, adj.GetLinux().GetResources())
	}
	return nil
}

func checkMounts(req *api.ValidateContainerAdjustmentRequest, adj *api.ContainerAdjustment) error {
	for _, m := range adj.GetMounts() {
		if _, removed := m.IsMarkedForRemoval(); removed || isPlainTmpfs(m) {
			continue
		}
		return fmt.Errorf("%w: plugin %q attempted restricted host mount adjustment (%s %q on %q)", validator.ErrValidation,
			ownerOf(req, req.GetOwners().MountOwner, m.GetDestination()), m.GetType(), m.GetSource(), m.GetDestination())
	}
	return nil
}

// isPlainTmpfs: a tmpfs brings no host data.
func isPlainTmpfs(m *api.Mount) bool {
	return m.GetType() == "tmpfs" && !slices.ContainsFunc(m.GetOptions(), func(o string) bool { return o == "bind" || o == "rbind" })
}

func checkDevices(req *api.ValidateContainerAdjustmentRequest, adj *api.ContainerAdjustment) error {
	owners := req.GetOwners()
	for _, d := range adj.GetLinux().GetDevices() {
		if _, removed := d.IsMarkedForRemoval(); removed {
			continue
		}
		return fmt.Errorf("%w: plugin %q attempted restricted device adjustment (%s %s %d:%d)", validator.ErrValidation,
			ownerOf(req, owners.DeviceOwner, d.GetPath()), d.GetPath(), d.GetType(), d.GetMajor(), d.GetMinor())
	}
	for hostIf := range adj.GetLinux().GetNetDevices() {
		if _, removed := api.IsMarkedForRemoval(hostIf); removed {
			continue
		}
		return fmt.Errorf("%w: plugin %q attempted restricted device adjustment (host network device %s)", validator.ErrValidation,
			ownerOf(req, owners.LinuxNetDeviceOwner, hostIf), hostIf)
	}
	return nil
}

// checkDeviceRules refuses device cgroup rules that allow access. NRI
// records no owner for them: the error names the plugins that took part.
func checkDeviceRules(req *api.ValidateContainerAdjustmentRequest, res *api.LinuxResources) error {
	if err := allowRule(res); err != nil {
		var names []string
		for _, p := range req.GetPlugins() {
			if name := p.GetIndex() + "-" + p.GetName(); name != validatorName {
				names = append(names, name)
			}
		}
		return fmt.Errorf("%w: one of plugins %q attempted restricted device cgroup rule adjustment (%w)", validator.ErrValidation, names, err)
	}
	return nil
}

// allowRule is the first device cgroup rule of res that allows access.
func allowRule(res *api.LinuxResources) error {
	for _, r := range res.GetDevices() {
		if r.GetAllow() {
			return fmt.Errorf("allow %s %d:%d %s", orDefault(r.GetType(), "a"), r.GetMajor().GetValue(), r.GetMinor().GetValue(), r.GetAccess())
		}
	}
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ownerOf names the plugin that set key of the container.
func ownerOf(req *api.ValidateContainerAdjustmentRequest, owner func(id, key string) (string, bool), key string) string {
	if name, ok := owner(req.GetContainer().GetId(), key); ok {
		return name
	}
	return "unknown"
}

// refusal marks a validator's rejection in the error the adaptation
// returns, which carries it as text only (api's ValidationResult:
// `validator "NAME" rejected container adjustment, reason: ...`; the unit
// tests pin the wording of the nri version in go.mod).
func isRefusal(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, `validator "`) && strings.Contains(msg, "rejected container adjustment")
}

// needsRequiredPlugins reports whether a pod's annotations name plugins its
// containers require (NRI's required-plugins annotation, for the pod or
// one of its containers).
func needsRequiredPlugins(annotations map[string]string) bool {
	for k := range annotations {
		if strings.HasPrefix(k, plugin.RequiredPluginsAnnotation) {
			return true
		}
	}
	return false
}
