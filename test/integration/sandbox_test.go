package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestPodGetsIPAndOwnNamespaces(t *testing.T) {
	i := newInstance(t)
	cfg := podConfig("ip")
	cfg.Hostname = "ip-host"
	cfg.DnsConfig = &runtimeapi.DNSConfig{Servers: []string{"10.0.0.10"}, Searches: []string{"it.svc"}, Options: []string{"ndots:5"}}
	cfg.Linux.Sysctls = map[string]string{"net.ipv4.ip_unprivileged_port_start": "81", "kernel.shm_rmid_forced": "1"}
	id := i.runPod(t, cfg)
	st, info := i.status(t, id)
	if st.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatalf("state %v", st.State)
	}
	_, subnet, _ := net.ParseCIDR(i.subnet)
	if ip := net.ParseIP(st.Network.Ip); ip == nil || !subnet.Contains(ip) {
		t.Fatalf("pod IP %q not in %s", st.Network.Ip, i.subnet)
	}
	if st.Metadata.Name != cfg.Metadata.Name || st.Labels["test"] != "ip" {
		t.Fatalf("metadata/labels not reported: %v", st)
	}
	self := i.cmd.Process.Pid // the daemon runs in the host's namespaces
	for _, ns := range []string{"net", "ipc", "uts", "pid"} {
		if nsInode(t, info.PID, ns) == nsInode(t, self, ns) {
			t.Errorf("pause shares the host's %s namespace", ns)
		}
	}
	out, err := exec.Command("nsenter", "-t", fmt.Sprint(info.PID), "-u", "-n", "-i", "sh", "-c",
		"hostname; cat /proc/sys/net/ipv4/ip_unprivileged_port_start /proc/sys/kernel/shm_rmid_forced; ip -4 -o addr show eth0; ip -o link show lo").CombinedOutput()
	if err != nil {
		t.Fatalf("nsenter: %v: %s", err, out)
	}
	got := string(out)
	for _, want := range []string{"ip-host\n81\n1\n", st.Network.Ip + "/", "lo: <LOOPBACK,UP"} {
		if !strings.Contains(got, want) {
			t.Errorf("inside the pod, want %q in:\n%s", want, got)
		}
	}
	resolv, _ := os.ReadFile(filepath.Join(i.dir, "root", "sandboxes", id, "resolv.conf"))
	if string(resolv) != "nameserver 10.0.0.10\nsearch it.svc\noptions ndots:5\n" {
		t.Errorf("resolv.conf = %q", resolv)
	}
	if h, _ := os.ReadFile(filepath.Join(i.dir, "root", "sandboxes", id, "hostname")); string(h) != "ip-host\n" {
		t.Errorf("hostname file = %q", h)
	}
	if !strings.Contains(strings.Join(mountsUnder(i.dir), " "), info.Shm) || info.Shm == "" {
		t.Errorf("private shm %q is not mounted", info.Shm)
	}
	if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", info.PID)); !strings.Contains(string(b), info.Cgroup) {
		t.Errorf("pause not in cgroup %s: %s", info.Cgroup, b)
	}
	i.stopRemove(t, id)
	i.assertNothingLeft(t, map[string]podInfo{id: info})
}

func TestTwoPodsReachEachOther(t *testing.T) {
	i := newInstance(t)
	a, b := i.runPod(t, podConfig("a")), i.runPod(t, podConfig("b"))
	stA, infoA := i.status(t, a)
	_, infoB := i.status(t, b)
	ln := make(chan net.Listener, 1)
	if err := inNetNS(t, infoA.NetNS, func() error {
		l, err := net.Listen("tcp", ":8080")
		ln <- l
		return err
	}); err != nil {
		t.Fatal(err)
	}
	l := <-ln
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			fmt.Fprintf(c, "hello from a\n")
			c.Close()
		}
	}()
	var reply []byte
	err := inNetNS(t, infoB.NetNS, func() error {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(stA.Network.Ip, "8080"), 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		reply = make([]byte, 64)
		n, err := c.Read(reply)
		reply = reply[:n]
		return err
	})
	if err != nil || string(reply) != "hello from a\n" {
		t.Fatalf("pod b -> pod a: %q, %v", reply, err)
	}
	l.Close() // the listener's socket would keep pod a's netns alive
	i.stopRemove(t, a)
	i.stopRemove(t, b)
	i.assertNothingLeft(t, map[string]podInfo{a: infoA, b: infoB})
}

func TestHostPortGetsRulesAndLosesThem(t *testing.T) {
	i := newInstance(t)
	cfg := podConfig("hp")
	cfg.PortMappings = []*runtimeapi.PortMapping{{HostPort: 18931, ContainerPort: 80, Protocol: runtimeapi.Protocol_TCP}}
	id := i.runPod(t, cfg)
	st, info := i.status(t, id)
	rules := natRules(t)
	if !strings.Contains(rules, "18931") || !strings.Contains(rules, st.Network.Ip+":80") {
		t.Fatalf("no DNAT rule for hostPort 18931 -> %s:80 in:\n%s", st.Network.Ip, rules)
	}
	i.stopRemove(t, id)
	if rules := natRules(t); strings.Contains(rules, st.Network.Ip+":80") {
		t.Fatalf("DNAT rule left after stop:\n%s", rules)
	}
	i.assertNothingLeft(t, map[string]podInfo{id: info})
}

func natRules(t *testing.T) string {
	out, err := exec.Command("iptables-save", "-t", "nat").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables-save: %v: %s", err, out)
	}
	nft, _ := exec.Command("nft", "list", "ruleset").CombinedOutput()
	return string(out) + string(nft)
}

func TestHostNamespaces(t *testing.T) {
	i := newInstance(t)
	cfg := podConfig("host")
	cfg.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_NODE,
	}}
	id := i.runPod(t, cfg)
	st, info := i.status(t, id)
	if st.Network.Ip != "" || info.NetNS != "" || info.Shm != "" {
		t.Fatalf("host-network pod got ip %q netns %q shm %q", st.Network.Ip, info.NetNS, info.Shm)
	}
	opts := st.Linux.Namespaces.Options
	if opts.Network != runtimeapi.NamespaceMode_NODE || opts.Ipc != runtimeapi.NamespaceMode_NODE || opts.Pid != runtimeapi.NamespaceMode_NODE {
		t.Fatalf("namespace options not reported back: %v", opts)
	}
	self := i.cmd.Process.Pid // the daemon runs in the host's namespaces
	for _, ns := range []string{"net", "ipc", "uts", "pid"} {
		if nsInode(t, info.PID, ns) != nsInode(t, self, ns) {
			t.Errorf("host pod has its own %s namespace", ns)
		}
	}
	// Host network with pod IPC: a private IPC namespace and shm, host net.
	cfg2 := podConfig("hostnet")
	cfg2.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}
	id2 := i.runPod(t, cfg2)
	_, info2 := i.status(t, id2)
	if nsInode(t, info2.PID, "net") != nsInode(t, self, "net") || nsInode(t, info2.PID, "ipc") == nsInode(t, self, "ipc") || info2.Shm == "" {
		t.Errorf("host-network pod: want host net, own IPC and shm; got shm %q", info2.Shm)
	}
	i.stopRemove(t, id)
	i.stopRemove(t, id2)
	i.assertNothingLeft(t, map[string]podInfo{id: info, id2: info2})
}

func TestBadInputGetsClearErrors(t *testing.T) {
	i := newInstance(t)
	cases := map[string]*runtimeapi.RunPodSandboxRequest{
		"no config":    {},
		"no metadata":  {Config: &runtimeapi.PodSandboxConfig{}},
		"no name":      {Config: &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Namespace: "n", Uid: "u"}}},
		"no namespace": {Config: &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "n", Uid: "u"}}},
		"no uid":       {Config: &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "n", Namespace: "n"}}},
		"host sysctl": {Config: &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "n", Namespace: "n", Uid: "u"},
			Linux: &runtimeapi.LinuxPodSandboxConfig{Sysctls: map[string]string{"kernel.panic": "1"}}}},
	}
	for name, req := range cases {
		_, err := i.rt.RunPodSandbox(ctx(t), req)
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: want InvalidArgument, got %v", name, err)
		}
	}
	if _, err := i.rt.PodSandboxStatus(ctx(t), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "0123456789"}); status.Code(err) != codes.NotFound {
		t.Errorf("status of unknown ID: want NotFound, got %v", err)
	}
	if _, err := i.rt.StopPodSandbox(ctx(t), &runtimeapi.StopPodSandboxRequest{PodSandboxId: "0123456789"}); err != nil {
		t.Errorf("stop of unknown ID must succeed: %v", err)
	}
	if _, err := i.rt.RemovePodSandbox(ctx(t), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: "0123456789"}); err != nil {
		t.Errorf("remove of unknown ID must succeed: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(i.dir, "root", "sandboxes")); len(entries) != 0 {
		t.Errorf("rejected requests left records: %v", entries)
	}
}

// writePlugin writes an executable CNI plugin script into dir.
func writePlugin(t *testing.T, dir, name, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// chainConf writes a conflist running the bridge plugin and then extra.
func chainConf(t *testing.T, confDir, name, bridge, subnet, dataDir, extra string) {
	t.Helper()
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":%q,"plugins":[
 {"type":"bridge","bridge":%q,"isGateway":true,"ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":%q}]]}},
 {"type":%q}]}`, name, bridge, dataDir, subnet, extra)
	if err := os.WriteFile(filepath.Join(confDir, "10-test.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFailingCNIPluginLeavesNothing(t *testing.T) {
	plugins := t.TempDir()
	writePlugin(t, plugins, "failer", `if [ "$CNI_COMMAND" = ADD ]; then echo '{"cniVersion":"1.0.0","code":11,"msg":"failer says no"}'; exit 1; fi
[ "$CNI_COMMAND" = VERSION ] && echo '{"cniVersion":"1.0.0","supportedVersions":["0.4.0","1.0.0"]}'
exit 0
`)
	conf := t.TempDir()
	i := newInstance(t, withConfDir(conf, plugins))
	chainConf(t, conf, i.netName, i.bridge, i.subnet, filepath.Join(i.dir, "root", "cni", "ipam"), "failer")
	_, err := i.rt.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: podConfig("fail")})
	if err == nil || !strings.Contains(err.Error(), "failer says no") {
		t.Fatalf("want the plugin's error, got %v", err)
	}
	list, _ := i.rt.ListPodSandbox(ctx(t), &runtimeapi.ListPodSandboxRequest{})
	if len(list.Items) != 0 {
		t.Fatalf("failed pod is listed: %v", list.Items)
	}
	if entries, _ := os.ReadDir(filepath.Join(i.dir, "root", "sandboxes")); len(entries) != 0 {
		t.Fatalf("records left: %v", entries)
	}
	if entries, _ := os.ReadDir(filepath.Join(i.dir, "state", "netns")); len(entries) != 0 {
		t.Fatalf("netns pins left: %v", entries)
	}
	if p := processesMentioning(i.dir); len(p) != 1 { // only the daemon itself
		t.Fatalf("processes left: %v", p)
	}
	i.assertNothingLeft(t, nil)
	if ips, _ := filepath.Glob(filepath.Join(i.dir, "root", "cni", "ipam", i.netName, "10.*")); len(ips) != 0 {
		t.Fatalf("IP leases left: %v", ips)
	}
}

func TestListFilters(t *testing.T) {
	i := newInstance(t)
	a := podConfig("lista")
	a.Labels = map[string]string{"app": "x", "tier": "web"}
	b := podConfig("listb")
	b.Labels = map[string]string{"app": "y"}
	idA, idB := i.runPod(t, a), i.runPod(t, b)
	i.rt.StopPodSandbox(ctx(t), &runtimeapi.StopPodSandboxRequest{PodSandboxId: idB})
	list := func(f *runtimeapi.PodSandboxFilter) []string {
		resp, err := i.rt.ListPodSandbox(ctx(t), &runtimeapi.ListPodSandboxRequest{Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, p := range resp.Items {
			ids = append(ids, p.Id)
		}
		return ids
	}
	check := func(name string, got []string, want ...string) {
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	check("all", list(nil), idA, idB)
	check("id", list(&runtimeapi.PodSandboxFilter{Id: idA}), idA)
	check("id prefix", list(&runtimeapi.PodSandboxFilter{Id: idB[:12]}), idB)
	check("ready", list(&runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}), idA)
	check("notready", list(&runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}}), idB)
	check("labels", list(&runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "x", "tier": "web"}}), idA)
	check("labels none", list(&runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "x", "tier": "db"}}))
	if st, _ := i.status(t, idB[:10]); st.Id != idB {
		t.Errorf("status by prefix returned %s", st.Id)
	}
}

func TestStopAndRemoveAreIdempotentAndConcurrent(t *testing.T) {
	i := newInstance(t)
	id := i.runPod(t, podConfig("idem"))
	_, info := i.status(t, id)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := i.rt.StopPodSandbox(ctx(t), &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
			errs <- err
		}()
	}
	wg.Wait()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := i.rt.RemovePodSandbox(ctx(t), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent stop/remove: %v", err)
		}
	}
	i.stopRemove(t, id)
	i.assertNothingLeft(t, map[string]podInfo{id: info})
}

func TestRemoveWithoutStop(t *testing.T) {
	i := newInstance(t)
	id := i.runPod(t, podConfig("rmonly"))
	_, info := i.status(t, id)
	if _, err := i.rt.RemovePodSandbox(ctx(t), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		t.Fatal(err)
	}
	i.assertNothingLeft(t, map[string]podInfo{id: info})
}

func TestRestartKeepsPodsUntouched(t *testing.T) {
	i := newInstance(t)
	keep, dies := i.runPod(t, podConfig("keep")), i.runPod(t, podConfig("dies"))
	stKeep, infoKeep := i.status(t, keep)
	_, infoDies := i.status(t, dies)
	netInode := nsInode(t, infoKeep.PID, "net")
	i.kill9()
	if !alive(infoKeep.PID) || !alive(infoKeep.MonitorPID) {
		t.Fatal("pause or monitor died with the daemon")
	}
	if err := syscall.Kill(infoDies.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	i.start()
	st, info := i.status(t, keep)
	if st.State != runtimeapi.PodSandboxState_SANDBOX_READY || st.Network.Ip != stKeep.Network.Ip || info.PID != infoKeep.PID {
		t.Fatalf("after restart: state %v ip %s pid %d; before: ip %s pid %d", st.State, st.Network.Ip, info.PID, stKeep.Network.Ip, infoKeep.PID)
	}
	if nsInode(t, info.PID, "net") != netInode {
		t.Fatal("pod netns changed across restart")
	}
	if st, _ := i.status(t, dies); st.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Fatalf("pod whose pause died while minicri was down: %v", st.State)
	}
	i.stopRemove(t, keep)
	i.stopRemove(t, dies)
	i.assertNothingLeft(t, map[string]podInfo{keep: infoKeep, dies: infoDies})
}

// slowPlugins makes a CNI plugin dir whose "slowbridge" sleeps, then runs the
// real bridge plugin, so a test can act while a RunPodSandbox is in flight.
func slowPlugins(t *testing.T, delay string) string {
	dir := t.TempDir()
	writePlugin(t, dir, "slowbridge", fmt.Sprintf("[ \"$CNI_COMMAND\" = ADD ] && sleep %s\nexec /opt/cni/bin/bridge\n", delay))
	return dir
}

func slowConf(t *testing.T, i *instance) {
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":%q,"plugins":[
 {"type":"slowbridge","bridge":%q,"isGateway":true,"ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":%q}]]}}]}`,
		i.netName, i.bridge, filepath.Join(i.dir, "root", "cni", "ipam"), i.subnet)
	if err := os.WriteFile(filepath.Join(i.confDir, "10-slow.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRetryWhileInFlightGetsTheSamePod(t *testing.T) {
	conf := t.TempDir()
	i := newInstance(t, withConfDir(conf, slowPlugins(t, "1.5")))
	slowConf(t, i)
	cfg := podConfig("retry")
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := i.rt.RunPodSandbox(short, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("first call: want DeadlineExceeded, got %v", err)
	}
	id := i.runPod(t, cfg) // the kubelet's retry
	list, _ := i.rt.ListPodSandbox(ctx(t), &runtimeapi.ListPodSandboxRequest{})
	if len(list.Items) != 1 || list.Items[0].Id != id {
		t.Fatalf("want exactly the one pod %s, got %v", id, list.Items)
	}
	if _, err := i.rt.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: cfg}); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("a third call once the result was claimed: want AlreadyExists, got %v", err)
	}
	_, info := i.status(t, id)
	i.stopRemove(t, id)
	i.assertNothingLeft(t, map[string]podInfo{id: info})
}

func TestCrashDuringCreateIsCleanedAtStart(t *testing.T) {
	conf := t.TempDir()
	i := newInstance(t, withConfDir(conf, slowPlugins(t, "3")))
	slowConf(t, i)
	go i.rt.RunPodSandbox(context.Background(), &runtimeapi.RunPodSandboxRequest{Config: podConfig("crash")})
	// Wait until the pod is half made: netns pinned, CNI ADD sleeping.
	var id string
	deadline := time.Now().Add(10 * time.Second)
	for id == "" {
		if entries, _ := os.ReadDir(filepath.Join(i.dir, "state", "netns")); len(entries) == 1 {
			id = entries[0].Name()
		}
		if time.Now().After(deadline) {
			t.Fatal("pod creation never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var st struct {
		Monitor struct{ PID int } `json:"monitor"`
		Pause   struct{ PID int } `json:"pause"`
	}
	// Let the monitor and pause start (CNI ADD sleeps 3 s meanwhile): 300 ms on a
	// host, seconds in the VM lab.
	var b []byte
	var err error
	for deadline := time.Now().Add(2500 * time.Millisecond); ; time.Sleep(50 * time.Millisecond) {
		b, _ = os.ReadFile(filepath.Join(i.dir, "state", "sandboxes", id, "monitor.json"))
		if err = json.Unmarshal(b, &st); (err == nil && alive(st.Pause.PID)) || time.Now().After(deadline) {
			break
		}
	}
	i.kill9()
	if err != nil || !alive(st.Pause.PID) {
		t.Fatalf("expected a running pause from the half-made pod (%s): %v", b, err)
	}
	time.Sleep(3 * time.Second) // the plugin finishes its ADD on its own
	i.start()
	list, _ := i.rt.ListPodSandbox(ctx(t), &runtimeapi.ListPodSandboxRequest{})
	if len(list.Items) != 0 {
		t.Fatalf("half-made pod is listed: %v", list.Items)
	}
	i.assertNothingLeft(t, map[string]podInfo{id: {PID: st.Pause.PID, MonitorPID: st.Monitor.PID, NetNS: filepath.Join(i.dir, "state", "netns", id), Cgroup: i.cgParent + "/" + id}})
}

func TestNetworkReadiness(t *testing.T) {
	conditions := func(i *instance) map[string]*runtimeapi.RuntimeCondition {
		resp, err := i.rt.Status(ctx(t), &runtimeapi.StatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*runtimeapi.RuntimeCondition{}
		for _, c := range resp.Status.Conditions {
			out[c.Type] = c
		}
		return out
	}
	i := newInstance(t, func(i *instance) { i.noDefaultNetwork = true })
	c := conditions(i)
	if !c[runtimeapi.RuntimeReady].Status {
		t.Fatal("runtime not ready")
	}
	if n := c[runtimeapi.NetworkReady]; n.Status || n.Reason == "" || n.Message == "" {
		t.Fatalf("no CNI config: want NetworkReady false with a reason, got %v", n)
	}
	chainConf(t, i.confDir, i.netName, i.bridge, i.subnet, filepath.Join(i.dir, "ipam"), "portmap")
	if n := conditions(i)[runtimeapi.NetworkReady]; !n.Status {
		t.Fatalf("with a CNI config: want NetworkReady, got %v", n)
	}
	if n := conditions(newInstance(t))[runtimeapi.NetworkReady]; !n.Status {
		t.Fatalf("built-in default network: want NetworkReady, got %v", n)
	}
}

func TestTwoInstancesSideBySide(t *testing.T) {
	a, b := newInstance(t), newInstance(t)
	idA, idB := a.runPod(t, podConfig("side")), b.runPod(t, podConfig("side"))
	for _, c := range []struct {
		in   *instance
		want string
	}{{a, idA}, {b, idB}} {
		list, err := c.in.rt.ListPodSandbox(ctx(t), &runtimeapi.ListPodSandboxRequest{})
		if err != nil || len(list.Items) != 1 || list.Items[0].Id != c.want {
			t.Fatalf("instance sees %v (%v), want only %s", list.GetItems(), err, c.want)
		}
	}
	_, infoA := a.status(t, idA)
	a.stopRemove(t, idA)
	if st, _ := b.status(t, idB); st.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatal("removing a pod of one instance disturbed the other")
	}
	a.assertNothingLeft(t, map[string]podInfo{idA: infoA})
}

func TestUpdateRuntimeConfigPodCIDR(t *testing.T) {
	i := newInstance(t)
	cidr := strings.Replace(i.subnet, ".0/24", ".128/25", 1)
	if _, err := i.rt.UpdateRuntimeConfig(ctx(t), &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: &runtimeapi.RuntimeConfig{NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: cidr}}}); err != nil {
		t.Fatal(err)
	}
	id := i.runPod(t, podConfig("cidr"))
	st, _ := i.status(t, id)
	_, n, _ := net.ParseCIDR(cidr)
	if !n.Contains(net.ParseIP(st.Network.Ip)) {
		t.Fatalf("pod IP %s not in the kubelet's pod CIDR %s", st.Network.Ip, cidr)
	}
	resp, err := i.rt.RuntimeConfig(ctx(t), &runtimeapi.RuntimeConfigRequest{})
	if err != nil || resp.Linux.CgroupDriver != wantDriver() {
		t.Fatalf("RuntimeConfig: %v %v", resp, err)
	}
}
