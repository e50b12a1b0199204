package network

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

func TestMasqueradeRule(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t, nil)
	table := masqTableName(testName)
	want := "ip saddr 10.201.0.0/16 ip daddr != 10.201.0.0/16 ip daddr != 224.0.0.0/4 counter packets"
	out := nftListTable(t, table)
	if !strings.Contains(out, want) || !strings.Contains(out, "masquerade") ||
		!strings.Contains(out, "type nat hook postrouting priority srcnat") {
		t.Fatalf("table ip %s:\n%s\nwant a rule with %q", table, out, want)
	}
	// Idempotent: a second manager re-installs without duplicating.
	m2, err := NewManager(e.cfg)
	if err != nil {
		t.Fatalf("second NewManager: %v", err)
	}
	if n := strings.Count(nftListTable(t, table), "masquerade"); n != 1 {
		t.Fatalf("%d masquerade rules after re-install, want 1", n)
	}

	// SetPodCIDR replaces the rule, persists the CIDR and is used for new pods.
	if err := m2.SetPodCIDR("10.202.3.0/24,fd00:10::/64"); err != nil {
		t.Fatalf("SetPodCIDR: %v", err)
	}
	out = nftListTable(t, table)
	if !strings.Contains(out, "ip saddr 10.202.3.0/24 ip daddr != 10.202.3.0/24") || strings.Contains(out, "10.201.") ||
		strings.Count(out, "masquerade") != 1 {
		t.Fatalf("after SetPodCIDR:\n%s", out)
	}
	if err := m2.SetPodCIDR("not-a-cidr"); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("SetPodCIDR(bad) = %v, want ErrInvalidConfig", err)
	}
	m3, err := NewManager(e.cfg) // reads the saved pod CIDR
	if err != nil {
		t.Fatal(err)
	}
	pod, _ := e.newPod(t)
	res := e.setupWith(t, m3, pod)
	mustInSubnet(t, res.IPs[0], "10.202.3.0/24")

	if err := m3.Close(true); err != nil {
		t.Fatalf("Close(true): %v", err)
	}
	if out := nftListTable(t, table); out != "" {
		t.Fatalf("table still there after Close(true):\n%s", out)
	}
	if err := m3.Close(true); err != nil {
		t.Fatalf("second Close(true): %v", err)
	}
}

func (e *testEnv) setupWith(t testing.TB, m *Manager, pod Pod) Result {
	t.Helper()
	res, err := m.Setup(context.Background(), pod)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	t.Cleanup(func() { _ = m.Teardown(context.Background(), pod) })
	return res
}

// nftListTable returns `nft list table ip <table>`, or "" if absent.
func nftListTable(t testing.TB, table string) string {
	t.Helper()
	out, err := exec.Command("nft", "list", "table", "ip", table).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "No such file") {
			return ""
		}
		t.Fatalf("nft list table ip %s: %v: %s", table, err, out)
	}
	return string(out)
}
