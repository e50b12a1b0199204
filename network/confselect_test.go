package network

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const (
	listA = `{"cniVersion":"1.0.0","name":"net-a","plugins":[{"type":"bridge","ipam":{"type":"host-local"}},{"type":"portmap"}]}`
	listB = `{"cniVersion":"1.0.0","name":"net-b","plugins":[{"type":"ptp"}]}`
	confC = `{"cniVersion":"1.0.0","name":"net-c","type":"macvlan","master":"eth0","ipam":{"type":"dhcp"}}`
)

func TestLoadFirstConfList(t *testing.T) {
	t.Run("missing or empty dir", func(t *testing.T) {
		for _, dir := range []string{"", filepath.Join(t.TempDir(), "nope"), t.TempDir()} {
			list, _, err := loadFirstConfList(dir)
			if err != nil || list != nil {
				t.Fatalf("dir %q: list=%v err=%v, want nil, nil", dir, list, err)
			}
		}
	})
	t.Run("first file by name wins", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "20-b.conflist", listB)
		writeFile(t, dir, "10-a.conflist", listA)
		writeFile(t, dir, "30-c.conf", confC)
		writeFile(t, dir, "00-ignored.txt", "junk")
		list, file, err := loadFirstConfList(dir)
		if err != nil {
			t.Fatal(err)
		}
		if list.Name != "net-a" || filepath.Base(file) != "10-a.conflist" {
			t.Fatalf("got %q from %s, want net-a from 10-a.conflist", list.Name, file)
		}
		if got := strings.Join(requiredPlugins(list), ","); got != "bridge,host-local,portmap" {
			t.Fatalf("requiredPlugins = %s", got)
		}
	})
	t.Run("single conf is wrapped", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "05-c.conf", confC)
		writeFile(t, dir, "10-a.conflist", listA)
		list, _, err := loadFirstConfList(dir)
		if err != nil {
			t.Fatal(err)
		}
		if list.Name != "net-c" || list.CNIVersion != "1.0.0" || len(list.Plugins) != 1 ||
			list.Plugins[0].Network.Type != "macvlan" {
			t.Fatalf("wrapped list = %+v", list)
		}
		if !strings.Contains(string(list.Bytes), `"plugins"`) {
			t.Fatalf("wrapped list bytes lack plugins: %s", list.Bytes)
		}
	})
	t.Run("conflist content in a .json file", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "01-b.json", listB)
		list, _, err := loadFirstConfList(dir)
		if err != nil || list.Name != "net-b" || len(list.Plugins) != 1 {
			t.Fatalf("list=%+v err=%v", list, err)
		}
	})
	t.Run("broken first file is an error", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "01-bad.conflist", "{not json")
		writeFile(t, dir, "10-a.conflist", listA)
		if _, _, err := loadFirstConfList(dir); err == nil {
			t.Fatal("want error")
		}
	})
}

// fakeBinDir makes empty executables for the named plugins.
func fakeBinDir(t *testing.T, plugins ...string) string {
	dir := t.TempDir()
	for _, p := range plugins {
		writeFile(t, dir, p, "#!/bin/sh\nexit 0\n")
	}
	return dir
}

func TestReady(t *testing.T) {
	newMgr := func(t *testing.T, confDir string, binDir string, def bool) *Manager {
		t.Helper()
		root := t.TempDir()
		m, err := NewManager(Config{
			ConfDir: confDir, BinDirs: []string{binDir},
			CacheDir: filepath.Join(root, "cache"), DataDir: filepath.Join(root, "ipam"),
			DefaultNetwork: def, DefaultName: "mcriunit", DefaultBridge: "mcriunit0", DefaultSubnet: "10.204.0.0/16",
		})
		if err != nil {
			t.Fatalf("NewManager: %v", err)
		}
		return m
	}

	t.Run("no config, default disabled", func(t *testing.T) {
		m := newMgr(t, t.TempDir(), fakeBinDir(t), false)
		err := m.Ready()
		if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "default network is disabled") {
			t.Fatalf("Ready = %v", err)
		}
	})
	t.Run("config with missing plugin", func(t *testing.T) {
		conf := t.TempDir()
		writeFile(t, conf, "10-a.conflist", listA)
		m := newMgr(t, conf, fakeBinDir(t, "bridge", "host-local"), false)
		err := m.Ready()
		if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), `"portmap"`) {
			t.Fatalf("Ready = %v", err)
		}
	})
	t.Run("config with plugins present", func(t *testing.T) {
		conf := t.TempDir()
		writeFile(t, conf, "10-a.conflist", listA)
		m := newMgr(t, conf, fakeBinDir(t, "bridge", "host-local", "portmap"), false)
		if err := m.Ready(); err != nil {
			t.Fatalf("Ready = %v", err)
		}
		list, isDefault, err := m.currentList()
		if err != nil || isDefault || list.Name != "net-a" {
			t.Fatalf("currentList = %v, %v, %v", list, isDefault, err)
		}
	})
	t.Run("empty dir falls back to default", func(t *testing.T) {
		// A config present at NewManager keeps it from touching nftables;
		// removing it afterwards makes the default network current.
		conf := t.TempDir()
		writeFile(t, conf, "10-a.conflist", listA)
		m := newMgr(t, conf, fakeBinDir(t, "bridge", "host-local"), true)
		if err := os.Remove(filepath.Join(conf, "10-a.conflist")); err != nil {
			t.Fatal(err)
		}
		list, isDefault, err := m.currentList()
		if err != nil || !isDefault || list.Name != "mcriunit" {
			t.Fatalf("currentList = %v, %v, %v", list, isDefault, err)
		}
		err = m.Ready()
		if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), `"portmap"`) {
			t.Fatalf("Ready without portmap = %v", err)
		}
	})
}

func TestDefaultConfList(t *testing.T) {
	list, raw, err := defaultConfList("mcriunit", "mcriunit0", "10.204.0.0/16", "/data/ipam", true)
	if err != nil {
		t.Fatal(err)
	}
	noPorts, rawNoPorts, err := defaultConfList("mcriunit", "mcriunit0", "10.204.0.0/16", "/data/ipam", false)
	if err != nil {
		t.Fatal(err)
	}
	if noPorts.Name != list.Name || len(noPorts.Plugins) != 1 || noPorts.Plugins[0].Network.Type != "bridge" ||
		strings.Contains(string(rawNoPorts), "portmap") {
		t.Fatalf("list without ports = %+v\n%s", noPorts, rawNoPorts)
	}
	if list.Name != "mcriunit" || list.CNIVersion != "1.0.0" || len(list.Plugins) != 2 {
		t.Fatalf("list = %+v", list)
	}
	if list.Plugins[0].Network.Type != "bridge" || list.Plugins[1].Network.Type != "portmap" {
		t.Fatalf("plugin order: %s, %s", list.Plugins[0].Network.Type, list.Plugins[1].Network.Type)
	}
	if !list.Plugins[1].Network.Capabilities["portMappings"] {
		t.Fatal("portmap lacks the portMappings capability")
	}
	for _, want := range []string{`"ipMasq": false`, `"isGateway": true`, `"hairpinMode": true`, `"dataDir": "/data/ipam"`,
		`"subnet": "10.204.0.0/16"`, `"dst": "0.0.0.0/0"`, `"snat": true`, `"bridge": "mcriunit0"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("default conflist lacks %s:\n%s", want, raw)
		}
	}
	if strings.Contains(string(raw), "loopback") {
		t.Error("default conflist runs the loopback plugin")
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{CacheDir: "/c", DataDir: "/d", DefaultNetwork: true, DefaultName: "x", DefaultBridge: "x0", DefaultSubnet: "10.0.0.0/8"}
	if err := good.validate(); err != nil {
		t.Fatal(err)
	}
	bad := []func(*Config){
		func(c *Config) { c.CacheDir = "" },
		func(c *Config) { c.DataDir = "" },
		func(c *Config) { c.DefaultName = "bad name" },
		func(c *Config) { c.DefaultBridge = "waytoolongbridgename" },
		func(c *Config) { c.DefaultSubnet = "fd00::/64" },
		func(c *Config) { c.DefaultSubnet = "nope" },
	}
	for i, mod := range bad {
		c := good
		mod(&c)
		if err := c.validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("case %d: validate = %v, want ErrInvalidConfig", i, err)
		}
	}
}

func TestRuntimeConf(t *testing.T) {
	rt := runtimeConf(Pod{ID: "id1", Name: "n", Namespace: "ns", UID: "u", CgroupParent: "/kubepods/x",
		PortMappings: []PortMapping{{HostPort: 80, ContainerPort: 8080, Protocol: "UDP", HostIP: "127.0.0.1"}, {ContainerPort: 1}}}, "/p")
	want := [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", "ns"}, {"K8S_POD_NAME", "n"},
		{"K8S_POD_INFRA_CONTAINER_ID", "id1"}, {"K8S_POD_UID", "u"}}
	if len(rt.Args) != len(want) {
		t.Fatalf("args = %v", rt.Args)
	}
	for i := range want {
		if rt.Args[i] != want[i] {
			t.Fatalf("args = %v, want %v", rt.Args, want)
		}
	}
	pms, _ := rt.CapabilityArgs["portMappings"].([]cniPortMapping)
	if len(pms) != 1 || pms[0] != (cniPortMapping{HostPort: 80, ContainerPort: 8080, Protocol: "udp", HostIP: "127.0.0.1"}) {
		t.Fatalf("portMappings = %+v", rt.CapabilityArgs["portMappings"])
	}
	if rt.CapabilityArgs["cgroupPath"] != "/kubepods/x" || rt.NetNS != "/p" || rt.IfName != "eth0" {
		t.Fatalf("rt = %+v", rt)
	}
	if rt := runtimeConf(Pod{ID: "x"}, ""); len(rt.CapabilityArgs) != 0 {
		t.Fatalf("empty pod capability args = %v", rt.CapabilityArgs)
	}
}
