package config

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// Runtime is a `[runtimes.<name>]` table: an OCI runtime binary with
// runc's command line that runs the containers of pods whose RuntimeClass
// handler is <name>. The built-in runtime is the handler "".
type Runtime struct {
	// Path is the runtime binary (absolute).
	Path string `toml:"path"`
	// Root is the runtime's state directory (--root); default
	// <state>/runtimes/<name>.
	Root string `toml:"root,omitempty"`
}

// handlerName is a RuntimeClass handler: a DNS label (RFC 1123).
var handlerName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// RuntimeRoot is the state directory of runtime name (valid after Validate).
func (c Config) RuntimeRoot(name string) string {
	if r := c.Runtimes[name].Root; r != "" {
		return r
	}
	return filepath.Join(c.State, "runtimes", name)
}

func (c Config) validateRuntimes() error {
	for name, r := range c.Runtimes {
		if !handlerName.MatchString(name) {
			return fmt.Errorf("config: runtimes.%s: the name must be a RuntimeClass handler, a DNS label (lower-case letters, digits, '-', up to 63)", name)
		}
		if !filepath.IsAbs(r.Path) {
			return fmt.Errorf("config: runtimes.%s.path must be an absolute path, got %q", name, r.Path)
		}
		fi, err := os.Stat(r.Path)
		if err != nil {
			return fmt.Errorf("config: runtimes.%s.path: %w", name, err)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("config: runtimes.%s.path %s is not an executable file", name, r.Path)
		}
		root := c.RuntimeRoot(name)
		if !filepath.IsAbs(root) {
			return fmt.Errorf("config: runtimes.%s.root must be an absolute path, got %q", name, root)
		}
		if filepath.Clean(root) == filepath.Join(c.State, "runc") {
			return fmt.Errorf("config: runtimes.%s.root %s is the built-in runtime's state", name, root)
		}
	}
	return nil
}
