package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadMissingFileGivesDefaults(t *testing.T) {
	cfg, err := Load(filepath.Join(t.TempDir(), "absent.toml"), true)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != Default().Listen || cfg.Network.ConfDir != "/etc/cni/net.d" {
		t.Fatalf("unexpected defaults: %+v", cfg)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "absent.toml"), false); err == nil {
		t.Fatal("an explicitly named missing file must be an error")
	}
}

func TestLoadOverridesAndRejectsUnknownKeys(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.toml")
	os.WriteFile(p, []byte("root = \"/x\"\n[network]\ndefault_bridge = \"br9\"\n"), 0o644)
	cfg, err := Load(p, false)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Root != "/x" || cfg.Network.DefaultBridge != "br9" || cfg.State != "/run/minicri" {
		t.Fatalf("override not applied: %+v", cfg)
	}
	os.WriteFile(p, []byte("rooot = \"/x\"\n"), 0o644)
	if _, err := Load(p, false); err == nil || !strings.Contains(err.Error(), "rooot") {
		t.Fatalf("want unknown-key error naming rooot, got %v", err)
	}
}

func TestWriteRoundTrips(t *testing.T) {
	var buf bytes.Buffer
	if err := Default().Write(&buf); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "c.toml")
	os.WriteFile(p, buf.Bytes(), 0o644)
	cfg, err := Load(p, false)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Network.DefaultSubnet != Default().Network.DefaultSubnet || len(cfg.Network.BinDirs) != 1 {
		t.Fatalf("round trip lost values: %+v", cfg)
	}
}

func TestValidate(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.Listen = "tcp://0.0.0.0:1"
	if err := c.Validate(); err == nil {
		t.Fatal("tcp listen must be rejected")
	}
	c = Default()
	c.Root = "rel"
	if err := c.Validate(); err == nil {
		t.Fatal("relative root must be rejected")
	}
}

func TestStreamDefaultsAndValidation(t *testing.T) {
	cfg := Default()
	if cfg.Stream.Address != "127.0.0.1" || cfg.Stream.Port != "0" || cfg.Validate() != nil {
		t.Fatalf("stream defaults: %+v (%v)", cfg.Stream, cfg.Validate())
	}
	if cfg.StreamIdleTimeout() <= 0 {
		t.Fatal("default idle timeout must be positive")
	}
	for _, bad := range []Stream{
		{Address: "localhost", Port: "0", IdleTimeout: "1h"},
		{Address: "127.0.0.1", Port: "70000", IdleTimeout: "1h"},
		{Address: "127.0.0.1", Port: "0", IdleTimeout: "1h", TLSCert: "/c.pem"},
		{Address: "127.0.0.1", Port: "0", IdleTimeout: "soon"},
	} {
		c := Default()
		c.Stream = bad
		if c.Validate() == nil {
			t.Errorf("stream config %+v accepted", bad)
		}
	}
}

func TestCgroupDriverAndParent(t *testing.T) {
	c := Default()
	if c.CgroupDriver != "auto" {
		t.Errorf("default cgroup_driver %q, want auto", c.CgroupDriver)
	}
	for _, d := range []string{"auto", "systemd", "cgroupfs"} {
		c.CgroupDriver = d
		if err := c.Validate(); err != nil {
			t.Errorf("cgroup_driver %q: %v", d, err)
		}
	}
	c.CgroupDriver = "cgroupfs2"
	if err := c.Validate(); err == nil {
		t.Error("unknown cgroup_driver accepted")
	}
	c.CgroupDriver = "auto"
	c.CgroupParent = "minicri.slice"
	if err := c.Validate(); err != nil {
		t.Errorf("slice parent: %v", err)
	}
	c.CgroupParent = "relative/path"
	if err := c.Validate(); err == nil {
		t.Error("relative cgroup_parent accepted")
	}
}

func TestRuntimesAreValidated(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "rt")
	os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755)
	notExe := filepath.Join(dir, "data")
	os.WriteFile(notExe, nil, 0o644)
	p := filepath.Join(dir, "c.toml")
	for _, tc := range []struct{ toml, wantErr string }{
		{"[runtimes.runc]\npath = \"" + exe + "\"\n", ""},
		{"[runtimes.runc]\npath = \"" + exe + "\"\nroot = \"/run/x\"\n", ""},
		{"[runtimes.Bad_Name]\npath = \"" + exe + "\"\n", "DNS label"},
		{"[runtimes.runc]\npath = \"rt\"\n", "absolute"},
		{"[runtimes.runc]\npath = \"" + filepath.Join(dir, "absent") + "\"\n", "no such file"},
		{"[runtimes.runc]\npath = \"" + notExe + "\"\n", "not an executable"},
		{"[runtimes.runc]\npath = \"" + dir + "\"\n", "not an executable"},
		{"[runtimes.runc]\npath = \"" + exe + "\"\nroot = \"/run/minicri/runc\"\n", "built-in"},
		{"[runtimes.runc]\npath = \"" + exe + "\"\nbinary = \"x\"\n", "unknown keys"},
	} {
		os.WriteFile(p, []byte(tc.toml), 0o644)
		cfg, err := Load(p, false)
		if err == nil {
			err = cfg.Validate()
		}
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%q: got %v, want error containing %q", tc.toml, err, tc.wantErr)
		}
		if err == nil && cfg.Runtimes["runc"].Path != exe {
			t.Errorf("%q: runtime not loaded: %+v", tc.toml, cfg.Runtimes)
		}
	}
	cfg := Default()
	cfg.Runtimes = map[string]Runtime{"runc": {Path: exe}}
	if got := cfg.RuntimeRoot("runc"); got != "/run/minicri/runtimes/runc" {
		t.Errorf("default root %q", got)
	}
}

// TestImageLazy: [image] lazy is off unless the file turns it on.
func TestImageLazy(t *testing.T) {
	if Default().Image.Lazy {
		t.Fatal("lazy pulls on by default")
	}
	p := filepath.Join(t.TempDir(), "c.toml")
	os.WriteFile(p, []byte("[image]\nlazy = true\n"), 0o644)
	cfg, err := Load(p, false)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Image.Lazy {
		t.Fatalf("[image] lazy = true not applied: %+v", cfg.Image)
	}
	var buf bytes.Buffer
	if err := cfg.Write(&buf); err != nil || !strings.Contains(buf.String(), "[image]\n  lazy = true") {
		t.Fatalf("written: %v\n%s", err, buf.String())
	}
}
