package network

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
)

func TestTeardownLeavesNothing(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t, nil)
	// A first pod keeps the bridge around while we count its ports.
	keep, _ := e.newPod(t)
	e.setup(t, keep)
	ports0 := bridgePorts(t, testBridge)
	ctx := context.Background()

	t.Run("netns alive", func(t *testing.T) {
		pod, ns := e.newPod(t, PortMapping{HostPort: 18932, ContainerPort: 80})
		if _, err := e.m.Setup(ctx, pod); err != nil {
			t.Fatal(err)
		}
		veth := hostVeth(t, ns).Attrs().Name
		if len(leaseFiles(t, e.cfg.DataDir, pod.ID)) != 1 || len(cacheFiles(t, e.cfg.CacheDir, pod.ID)) != 1 {
			t.Fatal("expected one lease and one cache entry after Setup")
		}
		if err := e.m.Teardown(ctx, pod); err != nil {
			t.Fatalf("Teardown: %v", err)
		}
		if _, err := netlink.LinkByName(veth); err == nil {
			t.Errorf("veth %s still exists", veth)
		}
		assertNoLeak(t, e, e.cfg.DataDir, testBridge, pod.ID, ports0)
		if err := e.m.Teardown(ctx, pod); err != nil {
			t.Fatalf("second Teardown: %v", err)
		}
		if err := ns.Remove(); err != nil {
			t.Fatal(err)
		}
		if err := e.m.Teardown(ctx, pod); err != nil {
			t.Fatalf("Teardown after netns removal: %v", err)
		}
	})

	t.Run("netns removed first", func(t *testing.T) {
		pod, ns := e.newPod(t, PortMapping{HostPort: 18933, ContainerPort: 80})
		if _, err := e.m.Setup(ctx, pod); err != nil {
			t.Fatal(err)
		}
		if e.m.NetNSNeededForTeardown(pod.ID) {
			t.Error("NetNSNeededForTeardown = true for a pod on the built-in network")
		}
		if !e.m.NetNSNeededForTeardown(randID(t)) {
			t.Error("NetNSNeededForTeardown = false for an unknown pod")
		}
		if err := ns.Remove(); err != nil {
			t.Fatal(err)
		}
		if err := e.m.Teardown(ctx, pod); err != nil {
			t.Fatalf("Teardown with removed netns: %v", err)
		}
		assertNoLeak(t, e, e.cfg.DataDir, testBridge, pod.ID, ports0)
		if strings.Contains(iptablesSave(t), pod.ID) {
			t.Error("DNAT rules left")
		}
		if err := e.m.Teardown(ctx, pod); err != nil {
			t.Fatalf("second Teardown: %v", err)
		}
	})

	t.Run("config changed after setup", func(t *testing.T) {
		pod, _ := e.newPod(t, PortMapping{HostPort: 18934, ContainerPort: 80})
		if _, err := e.m.Setup(ctx, pod); err != nil {
			t.Fatal(err)
		}
		// DEL must use the cached config and args, not this broken one.
		conf := filepath.Join(e.cfg.ConfDir, "00-other.conflist")
		writeFileT(t, conf, `{"cniVersion":"1.0.0","name":"other","plugins":[{"type":"nosuchplugin"}]}`)
		defer os.Remove(conf)
		if err := e.m.Teardown(ctx, pod); err != nil {
			t.Fatalf("Teardown: %v", err)
		}
		assertNoLeak(t, e, e.cfg.DataDir, testBridge, pod.ID, ports0)
		if strings.Contains(iptablesSave(t), pod.ID) {
			t.Error("DNAT rules left: DEL did not get the cached portMappings")
		}
	})

	t.Run("unknown pod", func(t *testing.T) {
		if err := e.m.Teardown(ctx, Pod{ID: randID(t)}); err != nil {
			t.Fatalf("Teardown of unknown pod: %v", err)
		}
		if err := e.m.Teardown(ctx, Pod{}); !errors.Is(err, ErrInvalidPod) {
			t.Fatalf("Teardown without ID = %v, want ErrInvalidPod", err)
		}
	})
}

const failPlugin = `#!/bin/sh
# A CNI plugin that fails ADD with a CNI error and accepts everything else.
cat >/dev/null
case "$CNI_COMMAND" in
ADD)
	echo '{"cniVersion":"1.0.0","code":999,"msg":"mcrifail: refusing ADD","details":"test plugin"}'
	exit 1 ;;
VERSION)
	echo '{"cniVersion":"1.0.0","supportedVersions":["0.4.0","1.0.0"]}' ;;
esac
exit 0
`

func TestFailingPluginLeavesNothing(t *testing.T) {
	requireRoot(t)
	root := t.TempDir()
	binDir := filepath.Join(root, "bin")
	dataDir := filepath.Join(root, "failipam")
	const bridge = "mcritest1"
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(binDir, "mcrifail"), []byte(failPlugin), 0o755); err != nil {
		t.Fatal(err)
	}
	conflist := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"mcritest-fail","plugins":[
	 {"type":"bridge","bridge":%q,"isGateway":true,"ipam":{"type":"host-local","dataDir":%q,
	  "ranges":[[{"subnet":"10.203.0.0/16"}]]}},
	 {"type":"mcrifail"}]}`, bridge, dataDir)
	e := newTestEnv(t, func(c *Config) {
		c.BinDirs = []string{testBinDir(), binDir}
		if err := os.WriteFile(filepath.Join(c.ConfDir, "10-fail.conflist"), []byte(conflist), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { deleteLink(t, bridge) })
	if err := e.m.Ready(); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	pod, _ := e.newPod(t)
	_, err := e.m.Setup(context.Background(), pod)
	if err == nil {
		t.Fatal("Setup with failing plugin succeeded")
	}
	if !strings.Contains(err.Error(), "mcrifail: refusing ADD") || !strings.Contains(err.Error(), "mcritest-fail") {
		t.Fatalf("error does not say what failed: %v", err)
	}
	t.Logf("Setup error: %v", err)
	if ports := bridgePorts(t, bridge); len(ports) != 0 {
		t.Errorf("veths left on %s: %v", bridge, ports)
	}
	assertNoLeak(t, e, dataDir, bridge, pod.ID, nil)
	// The default network's table is not installed: a config file is in use.
	if out := nftListTable(t, masqTableName(testName)); out != "" {
		t.Errorf("masquerade table installed although ConfDir has a config:\n%s", out)
	}
}
