package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// minicri is the soak's default runtime: bin/minicri on the instance.
type minicri struct{ bin string }

func (m *minicri) name() string     { return "minicri" }
func (m *minicri) monitor() string  { return "monitor" }
func (m *minicri) describe() string { return "minicri (" + m.bin + ")" }
func (m *minicri) images() []string { return nil }

func (m *minicri) configure(i *instance, subnet string, binDirs []string) error {
	if binDirs == nil {
		binDirs = []string{"/opt/cni/bin"}
	}
	dirs, _ := json.Marshal(binDirs)
	cfg := fmt.Sprintf("cgroup_parent = %q\n[network]\nconf_dir = %q\nbin_dirs = %s\n"+
		"default_name = \"minicri-soak\"\ndefault_bridge = %q\ndefault_subnet = %q\ndefault_network = true\n"+
		"[registry]\nconfig_path = %q\nno_progress_timeout = \"3s\"\n[metrics]\naddress = %q\n"+
		"[nri]\nsocket_path = %q\nplugin_path = %q\nplugin_config_path = %q\n",
		i.cgParent, filepath.Join(i.dir, "net.d"), dirs, i.bridge, subnet, i.hostsDir, i.metrics,
		filepath.Join(i.state, "nri", "nri.sock"), filepath.Join(i.dir, "nri", "plugins"), filepath.Join(i.dir, "nri", "conf.d"))
	return os.WriteFile(filepath.Join(i.dir, "config.toml"), []byte(cfg), 0o644)
}

func (m *minicri) command(i *instance) (*exec.Cmd, error) {
	return exec.Command(m.bin, "--config", filepath.Join(i.dir, "config.toml"), "--listen", "unix://"+i.sock,
		"--root", i.root, "--state", i.state, "--log-level", "debug"), nil
}

func (m *minicri) metricsURL(i *instance) string { return "http://" + i.metrics + "/metrics" }

// podInfo: minicri's verbose info names all of it.
func (m *minicri) podInfo(_ *instance, _ string, verbose map[string]string) (podInfo, error) {
	var info podInfo
	err := json.Unmarshal([]byte(verbose["info"]), &info)
	return info, err
}

// adjustPod: minicri puts pods under its configured cgroup_parent.
func (m *minicri) adjustPod(*instance, *runtimeapi.PodSandboxConfig) {}

func (m *minicri) skips() map[string]string { return nil }

func (m *minicri) release(*instance) {}

// leftovers: minicri's records naming the pod (files under its root and
// state); on the node, mounts under the instance's dir but its root and
// netns dir, and any record of a sandbox or container.
func (m *minicri) leftovers(s *soak, p *pod) []string {
	i := s.inst
	if p != nil {
		return recordsNaming(p.ids(), i.root, i.state)
	}
	var out []string
	for _, mnt := range mountsUnder(i.dir) {
		if mnt != i.root && mnt != filepath.Join(i.state, "netns") {
			out = append(out, "mount "+mnt)
		}
	}
	return append(out, recordsIn(i.dir, "state/netns", "state/sandboxes", "root/sandboxes", "root/containers", "state/containers")...)
}

// recordsIn lists the entries of the dirs (relative to dir) but dot files.
func recordsIn(dir string, subs ...string) []string {
	var out []string
	for _, sub := range subs {
		ents, _ := os.ReadDir(filepath.Join(dir, sub))
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), ".") {
				out = append(out, "record "+filepath.Join(sub, e.Name()))
			}
		}
	}
	return out
}
