// Command minicri is a Kubernetes CRI v1 runtime. The same binary is the
// daemon and `minicri config`; the per-pod monitor is minicri-monitor (C)
// and its helper minicri-monitor-helper (Go).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/minicri/minicri/config"
	"github.com/minicri/minicri/daemon"
)

func main() {
	fs := flag.NewFlagSet("minicri", flag.ExitOnError)
	cfgPath := fs.String("config", config.DefaultPath, "config file (TOML)")
	listen := fs.String("listen", "", "CRI socket, unix:///path (overrides the config file)")
	root := fs.String("root", "", "persistent state directory (overrides the config file)")
	state := fs.String("state", "", "volatile state directory (overrides the config file)")
	logLevel := fs.String("log-level", "", "debug, info, warn or error (overrides the config file)")
	lazy := fs.Bool("lazy-pulls", false, "mount eStargz layers lazily, [image] lazy (overrides the config file when given)")
	fs.Usage = func() {
		_, _ = fmt.Fprintf(fs.Output(), "usage: minicri [flags] [config]\n\n  config\tprint the effective configuration as TOML\n\nflags:\n")
		fs.PrintDefaults()
	}
	_ = fs.Parse(os.Args[1:]) // flag.ExitOnError: Parse exits on a bad flag

	explicit, lazySet := false, false
	fs.Visit(func(f *flag.Flag) {
		explicit = explicit || f.Name == "config"
		lazySet = lazySet || f.Name == "lazy-pulls"
	})
	cfg, err := config.Load(*cfgPath, !explicit)
	if err != nil {
		fatal(err)
	}
	for dst, v := range map[*string]string{&cfg.Listen: *listen, &cfg.Root: *root, &cfg.State: *state, &cfg.LogLevel: *logLevel} {
		if v != "" {
			*dst = v
		}
	}
	if lazySet {
		cfg.Image.Lazy = *lazy
	}
	switch fs.Arg(0) {
	case "":
		err = daemon.Run(cfg)
	case "config":
		err = cfg.Write(os.Stdout)
	default:
		fs.Usage()
		os.Exit(2)
	}
	if err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "minicri:", err)
	os.Exit(1)
}
