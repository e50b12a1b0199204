// Package daemon wires minicri together: configuration, the domain managers,
// the CRI server and its unix socket, and a graceful shutdown.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/minicri/minicri/apparmor"
	"github.com/minicri/minicri/cgdriver"
	"github.com/minicri/minicri/cgroupmount"
	"github.com/minicri/minicri/checkpoint"
	"github.com/minicri/minicri/config"
	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/image"
	"github.com/minicri/minicri/internal/events"
	"github.com/minicri/minicri/internal/hostdir"
	"github.com/minicri/minicri/lazy"
	"github.com/minicri/minicri/monitor"
	"github.com/minicri/minicri/network"
	"github.com/minicri/minicri/ocirt"
	"github.com/minicri/minicri/sandbox"
	"github.com/minicri/minicri/secprofile"
	"github.com/minicri/minicri/server"
	"github.com/minicri/minicri/streaming"
)

// Run serves CRI until SIGINT or SIGTERM.
func Run(cfg config.Config) error {
	log := newLogger(cfg.LogLevel)
	slog.SetDefault(log)
	if err := cfg.Validate(); err != nil {
		return err
	}
	exe, pause, err := programs(cfg)
	if err != nil {
		return err
	}
	if cfg, err = hostDirs(cfg, log); err != nil {
		return err
	}
	net, err := newNetwork(cfg)
	if err != nil {
		return err
	}
	cgDriver, cgParent, err := cgroups(cfg, log)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	obs, err := newObservability(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() { logIf(log, "stop telemetry", obs.stop()) }()
	images, profiles, err := newStores(cfg, exe, obs.pullObserver(), log)
	if err != nil {
		return err
	}
	// Before the containers are recovered: their images' lazily pulled
	// layers are served again if lazyfs lost them.
	if err := images.RemountLazy(ctx); err != nil {
		log.Warn("lazy layers not all mounted again", "err", err)
	}
	go images.WatchLazy(ctx, image.LazyWatchPeriod) // a lazyfs that dies is started again
	handlers := runtimeHandlers(ctx, cfg, log)
	hooks := &podContainers{}
	bus := events.NewBroker()
	nriHooks, err := newNRI(cfg.NRI, log)
	if err != nil {
		return err
	}
	sandboxes, err := sandbox.New(ctx, sandbox.Options{
		Root: cfg.Root, State: cfg.State, Exe: exe, PausePath: pause,
		CgroupParent: cgParent, CgroupDriver: cgDriver, Network: net, Containers: hooks, Log: log, Events: bus,
		Handlers: handlers, OCIProfiles: profiles,
		Hooks: nriHooks.sandbox(),
	})
	if err != nil {
		return err
	}
	containers, ckpts, aa, err := newContainers(ctx, cfg, images, profiles, sandboxes, handlers, bus, nriHooks.container(), log)
	if err != nil {
		return err
	}
	hooks.m = containers
	defer containers.Close()
	stopNRI, err := nriHooks.start(cfg.NRI, sandboxes, containers, log)
	if err != nil {
		return err
	}
	defer stopNRI()
	// Recovered containers have pinned their images again (removed ones
	// too, through their tombstones): what no image and no container uses
	// can go.
	if err := images.FinishRecovery(); err != nil {
		log.Warn("image GC after recovery", "err", err)
	}
	return serveCRI(ctx, node{cfg: cfg, log: log, pause: pause, net: net, cgDriver: cgDriver, obs: obs,
		images: images, profiles: profiles, handlers: handlers, bus: bus, sandboxes: sandboxes, containers: containers, ckpts: ckpts, aa: aa})
}

// node is what Run has built: the domain managers and what serves them.
type node struct {
	cfg        config.Config
	log        *slog.Logger
	pause      string
	net        *network.Manager
	cgDriver   cgdriver.Driver
	obs        *observability
	images     *image.Store
	profiles   *secprofile.Store
	handlers   *ocirt.Handlers
	bus        *events.Broker
	sandboxes  *sandbox.Manager
	containers *container.Manager
	ckpts      *checkpoint.Checkpointer
	aa         *apparmor.Host
}

// serveCRI starts streaming and metrics, serves CRI on the socket until ctx
// ends, then stops what it started and closes the pods' side.
func serveCRI(ctx context.Context, n node) error {
	cfg, log, sandboxes, containers := n.cfg, n.log, n.sandboxes, n.containers
	stream, err := newStreaming(cfg, containers, sandboxes, log)
	if err != nil {
		return err
	}
	stream.Start()
	if err := n.obs.serveMetrics(sandboxes, containers); err != nil {
		return errors.Join(err, stream.Stop())
	}
	cgHost := cgroupmount.Probe()
	log.Info("host cgroups", "v2", cgHost.Unified, "options", cgHost.Options, "cgroup_mount_mode", cgHost.ReadWriteSupported())
	srv := server.New(server.Deps{Sandboxes: sandboxes, Containers: containers, Checkpoints: n.ckpts, Images: n.images, Profiles: n.profiles, Network: n.net,
		Streaming: stream, Events: n.bus, Log: log, SystemdCgroups: n.cgDriver == cgdriver.Systemd, Handlers: handlerInfo(n.handlers, cgHost),
		CgroupMountMode: cgHost.ReadWriteSupported(),
		Config:          map[string]any{"stateDir": cfg.State, "rootDir": cfg.Root, "listen": cfg.Listen, "apparmor": appArmorInfo(n.aa)}})
	ln, err := listen(cfg)
	if err != nil {
		return errors.Join(err, stream.Stop())
	}
	log.Info("minicri serving", "listen", cfg.Listen, "root", cfg.Root, "state", cfg.State, "pause", n.pause, "streaming", stream.URL())
	err = serve(ctx, ln, srv, n.obs, log)
	noPods := len(sandboxes.List(sandbox.Filter{})) == 0
	return errors.Join(err, stream.Stop(), sandboxes.Close(), n.net.Close(noPods))
}

// newNetwork is the pods' network: CNI from the configured directories, or
// the default bridge network.
func newNetwork(cfg config.Config) (*network.Manager, error) {
	net, err := network.NewManager(network.Config{
		ConfDir:        cfg.Network.ConfDir,
		BinDirs:        cfg.Network.BinDirs,
		CacheDir:       filepath.Join(cfg.State, "cni", "cache"),
		DataDir:        filepath.Join(cfg.Root, "cni", "ipam"),
		DefaultNetwork: cfg.Network.DefaultNetwork,
		DefaultName:    cfg.Network.DefaultName,
		DefaultBridge:  cfg.Network.DefaultBridge,
		DefaultSubnet:  cfg.Network.DefaultSubnet,
	})
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	return net, nil
}

// cgroups is the configured cgroup driver and the parent of the pods' cgroups.
func cgroups(cfg config.Config, log *slog.Logger) (cgdriver.Driver, string, error) {
	cgDriver, err := cgdriver.Resolve(cfg.CgroupDriver)
	if err != nil {
		return cgDriver, "", fmt.Errorf("config: %w", err)
	}
	cgParent := cgDriver.DefaultParent(cfg.CgroupParent)
	log.Info("cgroups", "driver", cgDriver, "parent", cgParent, "unified", cgdriver.Unified())
	return cgDriver, cgParent, nil
}

// newStreaming is the exec/attach/port-forward server (not yet started).
func newStreaming(cfg config.Config, containers *container.Manager, sandboxes *sandbox.Manager, log *slog.Logger) (*streaming.Server, error) {
	return streaming.New(streaming.Config{
		Address: cfg.Stream.Address, Port: cfg.Stream.Port, TLSCert: cfg.Stream.TLSCert, TLSKey: cfg.Stream.TLSKey,
		IdleTimeout: cfg.StreamIdleTimeout(),
	}, containers, sandboxes, log)
}

// programs finds minicri's own executable and the pause program, and checks
// that the monitor's two programs are next to it: without them no pod could
// start, and the daemon says so at once rather than at the first
// RunPodSandbox.
func programs(cfg config.Config) (exe, pause string, err error) {
	exe, err = os.Executable()
	if err != nil {
		return "", "", fmt.Errorf("find own executable: %w", err)
	}
	pause = cfg.PausePath
	if pause == "" {
		pause = filepath.Join(filepath.Dir(exe), "minicri-pause")
	}
	if _, err := os.Stat(pause); err != nil {
		return "", "", fmt.Errorf("pause program: %w", err)
	}
	if err := monitor.CheckPrograms(exe); err != nil {
		return "", "", err
	}
	return exe, pause, nil
}

// hostDirs makes the root and state directories and returns cfg with their
// real paths. Root holds writable layers, unpacked layers and records: root
// only. State holds rootfs mounts, which the init of a container in a pod
// user namespace walks to as an unprivileged host user: searchable, with
// each container's own directory closed (see container.Manager). Either
// may be a symbolic link the operator made (to move it to another disk):
// it is resolved once, here, and everything below is checked never to be a
// link.
func hostDirs(cfg config.Config, log *slog.Logger) (config.Config, error) {
	var err error
	if cfg.Root, err = hostdir.Resolve(cfg.Root, hostdir.Private); err != nil {
		return cfg, err
	}
	if cfg.State, err = hostdir.Resolve(cfg.State, hostdir.Traversable); err != nil {
		return cfg, err
	}
	if err := hostdir.Ensure(cfg.Root, hostdir.Private); err != nil {
		return cfg, err
	}
	if err := hostdir.Ensure(cfg.State, hostdir.Traversable); err != nil {
		return cfg, err
	}
	warnUntraversable(log, cfg.State)
	return cfg, nil
}

// serve serves CRI on ln until it fails or ctx ends (SIGINT, SIGTERM),
// then stops gracefully.
func serve(ctx context.Context, ln net.Listener, srv *server.Server, obs *observability, log *slog.Logger) error {
	opts := append(obs.serverOptions(srv.Interceptor, srv.StreamInterceptor), grpc.MaxRecvMsgSize(16<<20), grpc.MaxSendMsgSize(16<<20))
	g := grpc.NewServer(opts...)
	srv.Register(g)
	errc := make(chan error, 1)
	go func() { errc <- g.Serve(ln) }()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		log.Info("shutting down")
		g.GracefulStop()
	}
	return err
}

// listen opens the unix socket, root-owned with mode 0660.
func listen(cfg config.Config) (net.Listener, error) {
	path, err := cfg.SocketPath()
	if err != nil {
		return nil, err
	}
	// Search-only, so clients reach the socket by path; the socket itself is 0600.
	if err := os.MkdirAll(filepath.Dir(path), 0o711); err != nil { //nolint:gosec // see above
		return nil, fmt.Errorf("create socket dir: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	old := syscall.Umask(0o117)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chown(path, 0, 0); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chown socket: %w", err)
	}
	return ln, nil
}

// newStores opens the image store and the store of pulled security
// profiles (root/secprofiles), which pulls through the former's registry
// access.
func newStores(cfg config.Config, exe string, obs image.PullObserver, log *slog.Logger) (*image.Store, *secprofile.Store, error) {
	images, err := newImageStore(cfg, exe, obs, log)
	if err != nil {
		return nil, nil, err
	}
	profiles, err := secprofile.Open(filepath.Join(cfg.Root, "secprofiles"), images, log)
	if err != nil {
		return nil, nil, err
	}
	return images, profiles, nil
}

func newImageStore(cfg config.Config, exe string, obs image.PullObserver, log *slog.Logger) (*image.Store, error) {
	timeout, err := time.ParseDuration(cfg.Registry.NoProgressTimeout)
	if err != nil {
		return nil, fmt.Errorf("config: registry.no_progress_timeout: %w", err)
	}
	// The node's lazyfs (lazily pulled layers), started at its first use;
	// also with lazy pulls off, for the layers pulled lazily before.
	lazyfs, err := lazy.NewNode(filepath.Join(cfg.State, "lazyfs"), filepath.Join(filepath.Dir(exe), "minicri-lazyfs"))
	if err != nil {
		return nil, err
	}
	store, err := image.New(image.Config{
		Root:               filepath.Join(cfg.Root, "images"),
		RegistryConfigPath: cfg.Registry.ConfigPath,
		NoProgressTimeout:  timeout,
		MaxLayerSize:       cfg.Registry.MaxLayerSize,
		MaxLayerRatio:      cfg.Registry.MaxLayerRatio,
		MaxImageSize:       cfg.Registry.MaxImageSize,
		MaxLayers:          cfg.Registry.MaxLayers,
		MaxEntries:         cfg.Registry.MaxEntries,
		Logger:             log,
		Observer:           obs,
		LazyPull:           cfg.Image.Lazy,
		Lazy:               lazyfs,
	})
	if err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	return store, nil
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}
