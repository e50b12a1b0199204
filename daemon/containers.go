package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/minicri/minicri/apparmor"
	"github.com/minicri/minicri/cdi"
	"github.com/minicri/minicri/checkpoint"
	"github.com/minicri/minicri/config"
	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/image"
	"github.com/minicri/minicri/internal/events"
	"github.com/minicri/minicri/sandbox"
	"github.com/minicri/minicri/security"
)

// newContainers creates the container manager with what it needs of the
// host: minicri's capabilities and AppArmor, whose default profile starts
// loading in the background (the first RuntimeDefault container waits
// for it; a daemon restart finds it loaded); and the checkpoints of its
// containers: the restorer it makes containers from checkpoints with, and
// the checkpointer (which thaws what an interrupted CheckpointPod left
// frozen).
func newContainers(ctx context.Context, cfg config.Config, images *image.Store, profiles container.OCIProfiles, sandboxes *sandbox.Manager,
	handlers container.Runtimes, bus *events.Broker, hooks container.Hooks, log *slog.Logger) (*container.Manager, *checkpoint.Checkpointer, *apparmor.Host, error) {
	caps, err := security.HostCapabilities()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read own capabilities: %w", err)
	}
	aa := apparmor.New(apparmor.Options{Dir: filepath.Join(cfg.State, "apparmor"), Log: log})
	log.Info("AppArmor", "enabled", aa.Enabled(), "default_profile", apparmor.DefaultProfileName)
	aa.Start()
	opts := container.Options{
		Root: cfg.Root, State: cfg.State, Images: images, Pods: pods{sandboxes}, HostCaps: caps,
		AppArmor: aa, Log: log, Events: bus, Runtimes: handlers, Hooks: hooks,
		Restorer: checkpoint.NewRestorer(images, log), OCIProfiles: profiles,
	}
	if cfg.CDI.Enable {
		reg, err := cdi.New(cfg.CDI.SpecDirs, log)
		if err != nil {
			return nil, nil, nil, err
		}
		opts.CDI = reg
	}
	containers, err := container.New(ctx, opts)
	if err != nil {
		if opts.CDI != nil {
			_ = opts.CDI.Close() // the daemon fails to start anyway
		}
		return nil, nil, nil, err
	}
	return containers, checkpoint.NewCheckpointer(ctx, containers, log), aa, nil
}

// appArmorInfo is what verbose Status says of AppArmor (the CRI has no
// feature field for it).
func appArmorInfo(aa *apparmor.Host) map[string]any {
	info := map[string]any{"enabled": aa.Enabled()}
	if aa.Enabled() {
		info["defaultProfile"] = apparmor.DefaultProfileName
	}
	return info
}
