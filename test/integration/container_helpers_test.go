package integration

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// busybox is the fixture image most container tests use.
const busybox = "registry.k8s.io/e2e-test-images/busybox:1.36.1-1"

func (i *instance) images() runtimeapi.ImageServiceClient {
	return runtimeapi.NewImageServiceClient(i.conn)
}

func (i *instance) pull(t *testing.T, ref string) string {
	t.Helper()
	resp, err := i.images().PullImage(ctx(t), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		t.Fatalf("PullImage %s: %v", ref, err)
	}
	return resp.ImageRef
}

// podWithLogs runs a pod whose log directory is under the instance.
func (i *instance) podWithLogs(t *testing.T, name string) (string, *runtimeapi.PodSandboxConfig) {
	t.Helper()
	cfg := i.logPodConfig(name)
	return i.runPod(t, cfg), cfg
}

// ctrConfig is a busybox container running the shell script.
func ctrConfig(name, script string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: busybox},
		Command:  []string{"sh", "-c", script},
		LogPath:  name + ".log",
		Linux:    &runtimeapi.LinuxContainerConfig{},
	}
}

func (i *instance) create(t *testing.T, podID string, pod *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) string {
	t.Helper()
	resp, err := i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: pod})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	return resp.ContainerId
}

func (i *instance) startCtr(t *testing.T, id string) {
	t.Helper()
	if _, err := i.rt.StartContainer(ctx(t), &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
}

// run creates and starts a container.
func (i *instance) run(t *testing.T, podID string, pod *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) string {
	t.Helper()
	id := i.create(t, podID, pod, cfg)
	i.startCtr(t, id)
	return id
}

func (i *instance) ctrStatus(t *testing.T, id string) *runtimeapi.ContainerStatus {
	t.Helper()
	resp, err := i.rt.ContainerStatus(ctx(t), &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		t.Fatalf("ContainerStatus: %v", err)
	}
	return resp.Status
}

// waitExited waits for the container to exit and returns its status.
func (i *instance) waitExited(t *testing.T, id string, within time.Duration) *runtimeapi.ContainerStatus {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st := i.ctrStatus(t, id)
		if st.State == runtimeapi.ContainerState_CONTAINER_EXITED {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %s still %v after %s", id, st.State, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logLine is one parsed CRI log line.
type logLine struct {
	stream, tag, content string
}

func readLog(t *testing.T, path string) []logLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open log: %v", err)
	}
	defer f.Close()
	var out []logLine
	r := bufio.NewReader(f)
	for {
		text, err := r.ReadString('\n')
		if err != nil {
			break // EOF; a last line still being written is not complete yet
		}
		text = strings.TrimSuffix(text, "\n")
		parts := strings.SplitN(text, " ", 4)
		if len(parts) < 3 {
			t.Fatalf("bad log line %q", text)
		}
		if _, err := time.Parse(time.RFC3339Nano, parts[0]); err != nil {
			t.Fatalf("bad timestamp in %q", text)
		}
		l := logLine{stream: parts[1], tag: parts[2]}
		if len(parts) == 4 {
			l.content = parts[3]
		}
		out = append(out, l)
	}
	return out
}

// waitLog waits until the log holds a line with content want.
func waitLog(t *testing.T, path, want string, within time.Duration) []logLine {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if _, err := os.Stat(path); err == nil {
			lines := readLog(t, path)
			for _, l := range lines {
				if l.content == want {
					return lines
				}
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(path)
			t.Fatalf("log %s has no line %q after %s:\n%s", path, want, within, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ctrLeftovers lists what a removed container could leave behind.
func (i *instance) ctrLeftovers(id string, pod podInfo) []string {
	var problems []string
	for _, d := range []string{
		filepath.Join(i.dir, "root", "containers", id), filepath.Join(i.dir, "state", "containers", id),
		filepath.Join(i.dir, "state", "runc", id), filepath.Join(i.dir, "state", "runtimes", "runc", id),
	} {
		if _, err := os.Stat(d); err == nil {
			problems = append(problems, "directory "+d)
		}
	}
	for _, d := range cgroupDirs(filepath.Join(i.cgParent, id)) {
		problems = append(problems, "cgroup "+d)
	}
	for _, m := range mountsUnder(i.dir) {
		if strings.Contains(m, id) {
			problems = append(problems, "mount "+m)
		}
	}
	return problems
}

func (i *instance) assertCtrGone(t *testing.T, id string) {
	t.Helper()
	if p := i.ctrLeftovers(id, podInfo{}); len(p) > 0 {
		t.Fatalf("container %s left behind:\n  %s", id, strings.Join(p, "\n  "))
	}
}
