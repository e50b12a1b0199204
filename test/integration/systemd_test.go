package integration

// minicri as a systemd service (issue 10 item 2). Needs systemd as PID 1
// (the VM lab, test/vm); elsewhere the test skips, saying so.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// startAsService stops the instance's daemon and runs it again as the
// transient service unit, whose stop kills everything left in its cgroup
// (KillMode=control-group, systemd's default), with Delegate=yes.
func (i *instance) startAsService(t *testing.T, unit string) {
	t.Helper()
	i.stop()
	logPath := filepath.Join(i.dir, "minicri.log")
	args := []string{"--unit", unit, "--collect", "--property=Delegate=yes", "--property=KillMode=control-group",
		"--property=StandardOutput=append:" + logPath, "--property=StandardError=append:" + logPath, "--",
		minicriBin(t), "--config", filepath.Join(i.dir, "config.toml"), "--listen", "unix://" + i.sock,
		"--root", filepath.Join(i.dir, "root"), "--state", filepath.Join(i.dir, "state"), "--log-level", "debug"}
	if out, err := exec.Command("systemd-run", args...).CombinedOutput(); err != nil {
		t.Fatalf("systemd-run: %v: %s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.Dial("unix", i.sock); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("minicri did not start as %s; log:\n%s", unit, i.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
	conn, err := grpc.NewClient("unix://"+i.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	i.conn, i.rt = conn, runtimeapi.NewRuntimeServiceClient(conn)
}

// TestMonitorsOutliveTheService: the attack of time. `systemctl stop` (or
// restart) of minicri's service kills its whole cgroup; pods must survive
// it, their monitors being in scopes of their own, and a new daemon takes
// them over.
func TestMonitorsOutliveTheService(t *testing.T) {
	if fi, err := os.Stat("/run/systemd/system"); err != nil || !fi.IsDir() {
		t.Skip("systemd is not PID 1 on this host: run in the VM lab (test/vm)")
	}
	i := newInstance(t)
	unit := fmt.Sprintf("minicri-it-%d-%d.service", os.Getpid(), podSeq.Add(1))
	i.startAsService(t, unit)
	t.Cleanup(func() {
		exec.Command("systemctl", "stop", unit).Run()
		if i.cmd.ProcessState != nil { // a daemon of its own for i.cleanup
			i.start()
		}
	})
	id := i.runPod(t, podConfig("service"))
	_, info := i.status(t, id)
	cg, err := os.ReadFile("/proc/" + strconv.Itoa(info.MonitorPID) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if want := "/system.slice/minicri-monitor-" + id + ".scope"; !strings.Contains(string(cg), want) {
		t.Errorf("the monitor's cgroup is %q, want %s", strings.TrimSpace(string(cg)), want)
	}

	i.conn.Close()
	if out, err := exec.Command("systemctl", "stop", unit).CombinedOutput(); err != nil {
		t.Fatalf("systemctl stop: %v: %s", err, out)
	}
	for _, pid := range []int{info.MonitorPID, info.PID} {
		if !alive(pid) {
			t.Errorf("process %d of pod %s died with the service", pid, id)
		}
	}
	i.start()
	st, _ := i.status(t, id)
	if st.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("pod %s is %v after the service's stop and a new daemon, want READY", id, st.State)
	}
	i.stopRemove(t, id)
	i.assertNothingLeft(t, map[string]podInfo{id: info})
}
