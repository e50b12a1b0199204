package apparmor

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	lcapparmor "github.com/opencontainers/runc/libcontainer/apparmor"
)

// DefaultProfileName is the profile RuntimeDefault containers run under.
const DefaultProfileName = "minicri-default"

// ErrNotEnabled: the kernel does not enforce AppArmor.
var ErrNotEnabled = errors.New("AppArmor is not enabled on this host")

// Options configure a Host. The zero values are the real host's paths.
type Options struct {
	// Dir receives the generated default profile (the state dir's
	// "apparmor"): its copy there records what was last loaded.
	Dir string
	Log *slog.Logger

	// For tests: whether AppArmor is on (default: libcontainer's
	// IsEnabled), the kernel's list of loaded profiles, the host's policy
	// directory, the parser, and this process's own label file.
	Enabled      *bool
	ProfilesFile string
	PolicyDir    string
	Parser       string
	SelfLabel    string
}

// Host answers for the host's AppArmor.
type Host struct {
	opts    Options
	enabled bool
	log     *slog.Logger

	mu     sync.Mutex
	loaded bool  // the default profile is in the kernel as generated
	err    error // of the last attempt
}

// New looks at the host; it loads nothing (see Start).
func New(opts Options) *Host {
	if opts.ProfilesFile == "" {
		opts.ProfilesFile = "/sys/kernel/security/apparmor/profiles"
	}
	if opts.PolicyDir == "" {
		opts.PolicyDir = "/etc/apparmor.d"
	}
	if opts.Parser == "" {
		opts.Parser = "apparmor_parser"
	}
	if opts.SelfLabel == "" {
		opts.SelfLabel = "/proc/self/attr/current"
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	enabled := lcapparmor.IsEnabled()
	if opts.Enabled != nil {
		enabled = *opts.Enabled
	}
	return &Host{opts: opts, enabled: enabled, log: opts.Log}
}

// Enabled reports whether the kernel enforces AppArmor.
func (h *Host) Enabled() bool { return h.enabled }

// Start loads the default profile in the background when AppArmor is
// enabled, so that the daemon's start does not wait for apparmor_parser;
// DefaultProfile waits for it.
func (h *Host) Start() {
	if h.enabled {
		go func() { _, _ = h.DefaultProfile() }()
	}
}

// DefaultProfile returns the default profile's name once it is loaded.
// A failed load (apparmor_parser missing, say) is tried again on the next
// call, so that fixing the host needs no restart.
func (h *Host) DefaultProfile() (string, error) {
	if !h.enabled {
		return "", ErrNotEnabled
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.loaded {
		h.err = h.ensureDefault()
		h.loaded = h.err == nil
	}
	if h.err != nil {
		return "", h.err
	}
	return DefaultProfileName, nil
}

// ensureDefault loads the default profile unless the kernel has it and the
// copy in Dir (written only after a successful load) is what would be
// loaded now: a daemon restart costs no apparmor_parser run, a reboot or
// a changed profile does.
func (h *Host) ensureDefault() error {
	text, err := generate(DefaultProfileName, h.daemonProfile(), h.opts.PolicyDir)
	if err != nil {
		return err
	}
	path := filepath.Join(h.opts.Dir, DefaultProfileName)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, text) {
		if ok, err := h.Loaded(DefaultProfileName); err == nil && ok {
			h.log.Debug("AppArmor default profile already loaded", "profile", DefaultProfileName)
			return nil
		}
	}
	start := time.Now()
	if err := h.load(path, text); err != nil {
		return fmt.Errorf("load AppArmor profile %s: %w", DefaultProfileName, err)
	}
	h.log.Info("AppArmor default profile loaded", "profile", DefaultProfileName, "file", path,
		"took", time.Since(start).Round(time.Millisecond).String())
	return nil
}

// load writes text next to path, has apparmor_parser replace the kernel's
// profile with it (-K: no cache writes), then renames it to path.
func (h *Host) load(path string, text []byte) error {
	if err := os.MkdirAll(h.opts.Dir, 0o700); err != nil {
		return err
	}
	parser, err := exec.LookPath(h.opts.Parser)
	if err != nil {
		return fmt.Errorf("apparmor_parser is needed to load it (install the apparmor package): %w", err)
	}
	pending := path + ".pending"
	if err := os.WriteFile(pending, text, 0o600); err != nil {
		return err
	}
	if out, err := exec.Command(parser, "-Kr", pending).CombinedOutput(); err != nil {
		_ = os.Remove(pending) // the load's error is the one to report; a leftover is rewritten next time
		return fmt.Errorf("%s -Kr %s: %w: %s", parser, pending, err, strings.TrimSpace(string(out)))
	}
	return os.Rename(pending, path)
}

// daemonProfile is the profile minicri itself runs under ("unconfined"
// unless an administrator confined it): the container may receive its
// signals.
func (h *Host) daemonProfile() string {
	b, err := os.ReadFile(h.opts.SelfLabel)
	if err != nil {
		return "unconfined"
	}
	// "name (mode)\n"; profile names hold no spaces here.
	name, _, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	if name == "" {
		return "unconfined"
	}
	return name
}

// Loaded reports whether the kernel has a profile of that name.
func (h *Host) Loaded(name string) (bool, error) {
	if !h.enabled {
		return false, ErrNotEnabled
	}
	f, err := os.Open(h.opts.ProfilesFile)
	if err != nil {
		return false, fmt.Errorf("list AppArmor profiles: %w", err)
	}
	defer f.Close()
	return listed(f, name)
}

// listed scans the kernel's profile list, one "name (mode)" a line.
func listed(r io.Reader, name string) (bool, error) {
	s := bufio.NewScanner(r)
	for s.Scan() {
		line := s.Text()
		if i := strings.LastIndex(line, " ("); i >= 0 && line[:i] == name {
			return true, nil
		}
	}
	if err := s.Err(); err != nil {
		return false, fmt.Errorf("list AppArmor profiles: %w", err)
	}
	return false, nil
}
