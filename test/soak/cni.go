package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// With SOAK_NETWORK=cni the instance runs a conflist whose first plugin is
// soak-bridge, a wrapper of the real bridge plugin: once per armed fault (a
// file the wrapper claims by renaming it), an ADD that bridge has done
// hangs for cniHang, or fails, leaving the veth and the lease to the runtime;
// or it hangs for ever, the hanging process a child that holds the plugin's
// stdout (minicri must kill the plugin's group at the caller's deadline, and
// a restarted minicri the plugins its killed predecessor left).
const cniWrapper = `#!/bin/sh
F=%[1]s/cni-fault
out=$(/opt/cni/bin/bridge)
rc=$?
if [ "$CNI_COMMAND" = ADD ] && [ $rc = 0 ] && mv "$F" "$F.taken" 2>/dev/null; then
	echo "$CNI_ARGS" >"$F.who"
	case $(cat "$F.taken") in
	hang) sleep %[2]d ;;
	hang-forever) sleep %[3]d ;;
	fail) echo '{"cniVersion":"1.0.0","code":999,"msg":"soak: soak-bridge failed mid-ADD"}'; exit 1 ;;
	esac
fi
printf '%%s\n' "$out"
exit $rc
`

const cniHang = 20 * time.Second

// cniForever is how long a hang "for ever" sleeps: the number marks the
// process, which the leak checks must never find.
const cniForever = 2147483646

// writeCNI puts the wrapper in <dir>/cni-bin and the conflist in the
// instance's conf dir; it returns the bin dirs minicri searches.
func (i *instance) writeCNI(subnet string) ([]string, error) {
	bin := filepath.Join(i.dir, "cni-bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return nil, err
	}
	script := fmt.Sprintf(cniWrapper, i.dir, int(cniHang/time.Second), cniForever)
	if err := os.WriteFile(filepath.Join(bin, "soak-bridge"), []byte(script), 0o755); err != nil { //nolint:gosec // a plugin: executable
		return nil, err
	}
	type obj = map[string]any
	list := obj{"cniVersion": "1.0.0", "name": "minicri-soak", "plugins": []any{obj{
		"type": "soak-bridge", "bridge": i.bridge, "isGateway": true, "ipMasq": false, "hairpinMode": true,
		"ipam": obj{"type": "host-local", "dataDir": filepath.Join(i.root, "cni", "ipam"),
			"ranges": []any{[]any{obj{"subnet": subnet}}}, "routes": []any{obj{"dst": "0.0.0.0/0"}}},
	}}}
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(i.dir, "net.d", "10-soak.conflist"), b, 0o644); err != nil { //nolint:gosec // CNI config is world-readable
		return nil, err
	}
	return []string{bin, "/opt/cni/bin"}, nil
}

// cniFault arms the wrapper for the next ADD and waits until one took it
// (and, for a hang, until it is over).
func (f *faults) cniFault(mode string) {
	file := filepath.Join(f.s.inst.dir, "cni-fault")
	f.begin("cni-" + mode)
	defer f.end("cni-" + mode)
	if err := os.WriteFile(file, []byte(mode), 0o600); err != nil {
		return
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(file + ".taken"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = os.Remove(file)
			return // no ADD in 30 s: not injected
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.logf("cni-"+mode, "soak-bridge: an ADD done by bridge then %s", map[string]string{"hang": fmt.Sprintf("hangs %v", cniHang),
		"fail": "fails", "hang-forever": "hangs for ever (a child holding its stdout)"}[mode])
	switch mode {
	case "hang":
		time.Sleep(cniHang)
	case "hang-forever":
		f.noteForever(file + ".who")
		f.awaitForeverKilled()
	}
	_ = os.Remove(file + ".taken")
}

// sandboxCreateCap is minicri's bound on a pod's creation, which goes on
// after the caller's deadline so that the kubelet's retry can take it
// (sandbox.createTimeout).
const sandboxCreateCap = 4 * time.Minute

// foreverNeeds is the run time a hang for ever needs left: the creation's
// cap and the grace of awaitForeverKilled (so soak-ci, 5 minutes, has none).
const foreverNeeds = sandboxCreateCap + 45*time.Second

// awaitForeverKilled waits until no process of the hang for ever is left:
// minicri kills the plugin's group when the pod's creation reaches its cap
// (or, after a daemon kill, when it starts again). Past the cap and some
// grace, a survivor is a finding.
func (f *faults) awaitForeverKilled() {
	mark := fmt.Sprintf("sleep\x00%d", cniForever)
	deadline := time.Now().Add(sandboxCreateCap + 30*time.Second)
	for {
		left := processesMentioning(mark, 0)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			f.s.find.add("leak", "a CNI plugin hanging for ever still runs %v after its ADD: %v", sandboxCreateCap+30*time.Second, left)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// noteForever records the pod whose ADD hangs for ever (its K8S_POD_NAME in
// the CNI_ARGS the wrapper wrote to who): that pod's RunPodSandbox may run
// to its deadline, no other's.
func (f *faults) noteForever(who string) {
	b, _ := os.ReadFile(who)
	_ = os.Remove(who)
	for _, kv := range strings.Split(strings.TrimSpace(string(b)), ";") {
		if name, ok := strings.CutPrefix(kv, "K8S_POD_NAME="); ok {
			f.mu.Lock()
			f.forever[name] = true
			f.mu.Unlock()
		}
	}
}

// hungForever reports whether pod's ADD took a hang for ever.
func (f *faults) hungForever(pod string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.forever[pod]
}
