package network

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

func TestSetupGivesIPOnBridge(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t, nil)
	if err := e.m.Ready(); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	pod, ns := e.newPod(t)
	res := e.setup(t, pod)
	if res.Network != testName {
		t.Errorf("Network = %q, want %q", res.Network, testName)
	}
	if len(res.IPs) != 1 {
		t.Fatalf("IPs = %v, want one", res.IPs)
	}
	mustInSubnet(t, res.IPs[0], testSubnet)

	veth := hostVeth(t, ns)
	br, err := netlink.LinkByName(testBridge)
	if err != nil {
		t.Fatalf("bridge: %v", err)
	}
	if veth.Attrs().MasterIndex != br.Attrs().Index {
		t.Fatalf("veth %s master %d, want bridge %d", veth.Attrs().Name, veth.Attrs().MasterIndex, br.Attrs().Index)
	}
	// lo is up and eth0 carries the IP inside the pod.
	if err := ns.Do(func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		if lo.Attrs().Flags&net.FlagUp == 0 {
			return errors.New("lo is down")
		}
		eth0, err := netlink.LinkByName(ifName)
		if err != nil {
			return err
		}
		addrs, err := netlink.AddrList(eth0, netlink.FAMILY_V4)
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if a.IP.String() == res.IPs[0] {
				return nil
			}
		}
		return fmt.Errorf("eth0 addrs %v lack %s", addrs, res.IPs[0])
	}); err != nil {
		t.Fatal(err)
	}

	// Setup again for the same pod and netns returns the same result.
	res2, err := e.m.Setup(context.Background(), pod)
	if err != nil {
		t.Fatalf("second Setup: %v", err)
	}
	if !slices.Equal(res2.IPs, res.IPs) {
		t.Fatalf("second Setup IPs %v, want %v", res2.IPs, res.IPs)
	}

	// The generated conflist is there for humans.
	if _, err := os.Stat(filepath.Join(filepath.Dir(e.cfg.CacheDir), "default.conflist")); err != nil {
		t.Errorf("default.conflist: %v", err)
	}
}

func TestPodsReachEachOther(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t, nil)
	podA, nsA := e.newPod(t)
	podB, nsB := e.newPod(t)
	resA := e.setup(t, podA)
	resB := e.setup(t, podB)

	var ln net.Listener
	if err := nsA.Do(func() error {
		var err error
		ln, err = net.Listen("tcp4", ":8080")
		return err
	}); err != nil {
		t.Fatalf("listen in pod A: %v", err)
	}
	defer ln.Close()
	seen := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			seen <- "accept: " + err.Error()
			return
		}
		defer c.Close()
		host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		_, _ = io.WriteString(c, "hello "+host+"\n")
		seen <- host
	}()

	var reply string
	if err := nsB.Do(func() error {
		c, err := net.DialTimeout("tcp4", net.JoinHostPort(resA.IPs[0], "8080"), 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		reply, err = bufio.NewReader(c).ReadString('\n')
		return err
	}); err != nil {
		t.Fatalf("dial pod A from pod B: %v", err)
	}
	if got := <-seen; got != resB.IPs[0] {
		t.Fatalf("pod A saw peer %q, want pod B %q", got, resB.IPs[0])
	}
	if reply != "hello "+resB.IPs[0]+"\n" {
		t.Fatalf("reply %q", reply)
	}
}

func iptablesSave(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("iptables-save", "-t", "nat").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables-save: %v: %s", err, out)
	}
	return string(out)
}

func TestHostPortDNAT(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t, nil)
	pod, _ := e.newPod(t, PortMapping{HostPort: 18931, ContainerPort: 8080, Protocol: "TCP"},
		PortMapping{ContainerPort: 9090}) // no hostPort: not mapped
	res := e.setup(t, pod)

	rules := iptablesSave(t)
	dnat := fmt.Sprintf("--dport 18931 -j DNAT --to-destination %s:8080", res.IPs[0])
	if !strings.Contains(rules, dnat) {
		t.Fatalf("no %q in iptables nat:\n%s", dnat, rules)
	}
	if !strings.Contains(rules, pod.ID) {
		t.Fatalf("no rule names pod %s:\n%s", pod.ID, rules)
	}
	if strings.Contains(rules, "9090") {
		t.Fatalf("containerPort without hostPort was mapped:\n%s", rules)
	}

	if err := e.m.Teardown(context.Background(), pod); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	rules = iptablesSave(t)
	if strings.Contains(rules, pod.ID) || strings.Contains(rules, dnat) {
		t.Fatalf("pod's DNAT rules left after Teardown:\n%s", rules)
	}
	// portmap's shared chains stay.
	if !strings.Contains(rules, ":CNI-HOSTPORT-DNAT") {
		t.Errorf("shared CNI-HOSTPORT-DNAT chain is gone")
	}
}

func TestParallelPods(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t, nil)
	const n = 6
	pods := make([]Pod, n)
	for i := range pods {
		pods[i], _ = e.newPod(t)
	}
	ctx := context.Background()
	ips := make([]string, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range pods {
		wg.Go(func() {
			res, err := e.m.Setup(ctx, pods[i])
			errs[i] = err
			if err == nil {
				ips[i] = res.IPs[0]
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("parallel Setup: %v", err)
	}
	slices.Sort(ips)
	if len(slices.Compact(slices.Clone(ips))) != n {
		t.Fatalf("duplicate IPs: %v", ips)
	}
	for i := range pods {
		wg.Go(func() { errs[i] = e.m.Teardown(ctx, pods[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("parallel Teardown: %v", err)
	}
	for _, p := range pods {
		assertNoLeak(t, e, e.cfg.DataDir, testBridge, p.ID, nil)
	}
}

func writeFileT(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPortmapOnlyForHostPorts: on the built-in network, portmap runs only
// for a pod that maps a host port (it has nothing to do for the others, yet
// costs a plugin run and two iptables runs at ADD and at DEL); DEL runs
// the list ADD ran.
func TestPortmapOnlyForHostPorts(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t, nil)
	plain, _ := e.newPod(t, PortMapping{ContainerPort: 9090}) // no hostPort
	mapped, _ := e.newPod(t, PortMapping{HostPort: 18932, ContainerPort: 8080, Protocol: "TCP"})
	for _, c := range []struct {
		pod     Pod
		portmap bool
	}{{plain, false}, {mapped, true}} {
		e.setup(t, c.pod)
		atts, err := e.m.cni.GetCachedAttachments(c.pod.ID)
		if err != nil || len(atts) != 1 {
			t.Fatalf("cached attachments of %s: %v, %v", c.pod.ID, atts, err)
		}
		if got := strings.Contains(string(atts[0].Config), `"portmap"`); got != c.portmap {
			t.Errorf("pod %s (host port: %v): ADD ran portmap: %v\n%s", c.pod.ID, c.portmap, got, atts[0].Config)
		}
		if atts[0].Network != testName {
			t.Errorf("network %q, want %q", atts[0].Network, testName)
		}
	}
	if rules := iptablesSave(t); !strings.Contains(rules, "--dport 18932 -j DNAT") {
		t.Fatalf("the mapped pod's DNAT rule is missing:\n%s", rules)
	}
	for _, p := range []Pod{plain, mapped} {
		if err := e.m.Teardown(context.Background(), p); err != nil {
			t.Fatalf("Teardown %s: %v", p.ID, err)
		}
	}
	if rules := iptablesSave(t); strings.Contains(rules, mapped.ID) || strings.Contains(rules, "--dport 18932") {
		t.Fatalf("DNAT rules left after Teardown:\n%s", rules)
	}
}
