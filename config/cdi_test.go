package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCDIConfig(t *testing.T) {
	d := Default().CDI
	if !d.Enable || !slices.Equal(d.SpecDirs, []string{"/etc/cdi", "/var/run/cdi"}) {
		t.Errorf("default [cdi] %+v", d)
	}
	p := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(p, []byte("[cdi]\nenable = false\nspec_dirs = [\"/srv/cdi\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p, false)
	if err != nil {
		t.Fatal(err)
	}
	if c.CDI.Enable || !slices.Equal(c.CDI.SpecDirs, []string{"/srv/cdi"}) {
		t.Errorf("loaded [cdi] %+v", c.CDI)
	}
	c.CDI.SpecDirs = []string{"relative/cdi"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "cdi.spec_dirs") {
		t.Errorf("a relative spec dir: %v", err)
	}
}
