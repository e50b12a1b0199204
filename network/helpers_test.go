package network

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

const (
	testName   = "mcritest"
	testBridge = "mcritest0"
	testSubnet = "10.201.0.0/16"
)

func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

// testBinDir is where the CNI plugins live (MINICRI_CNI_BIN_DIR overrides).
func testBinDir() string {
	if d := os.Getenv("MINICRI_CNI_BIN_DIR"); d != "" {
		return d
	}
	return "/opt/cni/bin"
}

type testEnv struct {
	m      *Manager
	cfg    Config
	nsDir  string
	bridge string
}

// newTestEnv makes a Manager on private dirs with the test default
// network, and registers cleanup of everything it may create on the host.
func newTestEnv(t testing.TB, mod func(*Config)) *testEnv {
	t.Helper()
	root := t.TempDir()
	cfg := Config{
		ConfDir:        filepath.Join(root, "net.d"),
		BinDirs:        []string{testBinDir()},
		CacheDir:       filepath.Join(root, "state", "cni", "cache"),
		DataDir:        filepath.Join(root, "ipam"),
		DefaultNetwork: true,
		DefaultName:    testName,
		DefaultBridge:  testBridge,
		DefaultSubnet:  testSubnet,
	}
	if err := os.MkdirAll(cfg.ConfDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if mod != nil {
		mod(&cfg)
	}
	env := &testEnv{cfg: cfg, nsDir: filepath.Join(root, "netns"), bridge: cfg.DefaultBridge}
	t.Cleanup(func() {
		deleteLink(t, env.bridge)
		_ = removeMasquerade(masqTableName(cfg.DefaultName))
	})
	unmountDirOnCleanup(t, env.nsDir)
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatalf("NewManager: %v", err)
	}
	env.m = m
	t.Cleanup(func() {
		if err := m.Close(true); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return env
}

// unmountDirOnCleanup undoes ensureSharedDir for a temp netns dir.
func unmountDirOnCleanup(t testing.TB, dir string) {
	t.Cleanup(func() {
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return
		}
		_ = unmountAll(real)
		sharedDirs.Lock()
		delete(sharedDirs.done, real)
		sharedDirs.Unlock()
	})
}

func deleteLink(t testing.TB, name string) {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return
	}
	if err := netlink.LinkDel(l); err != nil {
		t.Errorf("delete link %s: %v", name, err)
	}
}

func randID(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// newPod pins a netns for a new pod; the pin is removed on cleanup.
func (e *testEnv) newPod(t testing.TB, pms ...PortMapping) (Pod, *NetNS) {
	t.Helper()
	id := randID(t)
	ns, err := NewNetNS(e.nsDir, id)
	if err != nil {
		t.Fatalf("NewNetNS: %v", err)
	}
	t.Cleanup(func() { _ = ns.Remove() })
	return Pod{
		ID: id, Name: "pod-" + id[:6], Namespace: "default", UID: "uid-" + id[:8],
		NetNSPath: ns.Path(), PortMappings: pms,
	}, ns
}

func (e *testEnv) setup(t testing.TB, pod Pod) Result {
	t.Helper()
	res, err := e.m.Setup(context.Background(), pod)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	t.Cleanup(func() { _ = e.m.Teardown(context.Background(), pod) })
	return res
}

// hostVeth returns the host side of the pod's eth0, or nil if gone.
func hostVeth(t testing.TB, ns *NetNS) netlink.Link {
	t.Helper()
	var peer int
	if err := ns.Do(func() error {
		l, err := netlink.LinkByName(ifName)
		if err != nil {
			return err
		}
		peer = l.Attrs().ParentIndex
		return nil
	}); err != nil {
		t.Fatalf("read eth0 in pod netns: %v", err)
	}
	l, err := netlink.LinkByIndex(peer)
	if err != nil {
		t.Fatalf("host veth %d: %v", peer, err)
	}
	return l
}

// bridgePorts lists the names of the links enslaved to bridge.
func bridgePorts(t testing.TB, bridge string) []string {
	t.Helper()
	br, err := netlink.LinkByName(bridge)
	if err != nil {
		return nil
	}
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range links {
		if l.Attrs().MasterIndex == br.Attrs().Index {
			out = append(out, l.Attrs().Name)
		}
	}
	return out
}

// leaseFiles returns host-local lease files under dataDir naming id.
func leaseFiles(t testing.TB, dataDir, id string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dataDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), id) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// cacheFiles returns libcni cache result files for id.
func cacheFiles(t testing.TB, cacheDir, id string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(cacheDir, "results", "*-"+id+"-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// assertNoLeak checks that nothing of pod id is left. The host veth of a
// pod whose netns was removed first disappears asynchronously.
func assertNoLeak(t testing.TB, e *testEnv, dataDir, bridge, id string, ports0 []string) {
	t.Helper()
	if l := leaseFiles(t, dataDir, id); len(l) > 0 {
		t.Errorf("host-local leases left for %s: %v", id, l)
	}
	if c := cacheFiles(t, e.cfg.CacheDir, id); len(c) > 0 {
		t.Errorf("libcni cache entries left for %s: %v", id, c)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ports := bridgePorts(t, bridge)
		if len(ports) <= len(ports0) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("bridge %s ports: before %v, after teardown %v", bridge, ports0, ports)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func mustInSubnet(t testing.TB, ip, subnet string) {
	t.Helper()
	_, n, _ := net.ParseCIDR(subnet)
	if p := net.ParseIP(ip); p == nil || !n.Contains(p) {
		t.Fatalf("IP %q not in %s", ip, subnet)
	}
}

// pinMounted reports whether path appears as a mount point in
// /proc/self/mountinfo.
func pinMounted(t testing.TB, path string) bool {
	t.Helper()
	mounted, _, err := mountState(path)
	if err != nil {
		t.Fatal(err)
	}
	return mounted
}

func TestMain(m *testing.M) {
	// Keep test and benchmark output readable: only warnings and errors.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	os.Exit(m.Run())
}
