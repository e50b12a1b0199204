// Command minicri-lazyfs serves lazily pulled eStargz layers as FUSE
// filesystems for minicri, one process per node (package lazy): the daemon
// starts it detached and talks to it over a unix socket, so the files of
// running containers stay readable while the daemon is killed or restarted.
package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/minicri/minicri/lazy"
)

func main() {
	socket := flag.String("socket", "/run/minicri/lazyfs.sock", "unix socket to serve the daemon on")
	level := flag.String("log-level", "info", "debug, info, warn or error")
	oomAdj := flag.Int("oom-score-adj", -998, "its own oom_score_adj: the OOM killer taking it takes every lazy layer's files")
	flag.Parse()
	var l slog.Level
	if err := l.UnmarshalText([]byte(*level)); err != nil {
		slog.Error("minicri-lazyfs: bad --log-level", "error", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte(strconv.Itoa(*oomAdj)), 0); err != nil {
		log.Warn("minicri-lazyfs: oom_score_adj not set", "value", *oomAdj, "error", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	if err := lazy.NewServer(log).Serve(ctx, *socket); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("minicri-lazyfs: exiting", "error", err)
		os.Exit(1)
	}
}
