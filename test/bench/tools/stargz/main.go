// Command containerd-stargz-grpc is stargz-snapshotter's snapshotter served as containerd's
// proxy snapshotter, for `make bench-lazy` (hack/bench-tools.sh builds it). Upstream's own
// command lives in a module of its own (github.com/containerd/stargz-snapshotter/cmd) that
// the Go module proxy does not serve, so this is its core: the same service
// (service.NewStargzSnapshotterService: FUSE layers, in-memory metadata, the resolver
// config's mirrors) behind containerd's snapshots gRPC API, on a unix socket. Left out: the
// CRI and kubeconfig keychains, the fuse manager, the bolt metadata store, IPFS, metrics.
//
//	containerd-stargz-grpc -address SOCK -root DIR [-config FILE] [-log-level info]
//
// SIGINT or SIGTERM: stop serving, then close the snapshotter (unmounting its layers).
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	snapshotsapi "github.com/containerd/containerd/api/services/snapshots/v1"
	"github.com/containerd/containerd/v2/contrib/snapshotservice"
	"github.com/containerd/log"
	"github.com/containerd/stargz-snapshotter/service"
	"github.com/pelletier/go-toml/v2"
	"google.golang.org/grpc"
)

func main() {
	address := flag.String("address", "", "unix socket to serve containerd's snapshots API on")
	root := flag.String("root", "", "the snapshotter's directory (snapshots, layer caches)")
	configPath := flag.String("config", "", "TOML configuration (stargz-snapshotter's config.toml)")
	level := flag.String("log-level", "info", "log level")
	flag.Parse()
	if err := run(*address, *root, *configPath, *level); err != nil {
		fmt.Fprintf(os.Stderr, "containerd-stargz-grpc: %v\n", err)
		os.Exit(1)
	}
}

func run(address, root, configPath, level string) error {
	if address == "" || root == "" {
		return fmt.Errorf("-address and -root are required")
	}
	if err := log.SetLevel(level); err != nil {
		return fmt.Errorf("log level %q: %w", level, err)
	}
	var cfg service.Config
	if configPath != "" {
		b, err := os.ReadFile(configPath)
		if err != nil {
			return fmt.Errorf("read config: %w", err)
		}
		if err := toml.Unmarshal(b, &cfg); err != nil {
			return fmt.Errorf("parse config %s: %w", configPath, err)
		}
	}
	ctx := log.WithLogger(context.Background(), log.L)
	rs, err := service.NewStargzSnapshotterService(ctx, root, &cfg)
	if err != nil {
		return fmt.Errorf("snapshotter: %w", err)
	}
	defer rs.Close()
	if err := os.MkdirAll(filepath.Dir(address), 0o700); err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	_ = os.Remove(address)
	ln, err := net.Listen("unix", address)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	rpc := grpc.NewServer()
	snapshotsapi.RegisterSnapshotsServer(rpc, snapshotservice.FromSnapshotter(rs))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sig
		log.L.Infof("%v: stopping", s)
		rpc.Stop()
	}()
	log.L.Infof("serving on %s", address)
	if err := rpc.Serve(ln); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
