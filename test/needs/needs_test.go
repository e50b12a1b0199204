package needs

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const root = "../.."

// phasesOf says which phases run the code of a file: a program it runs must be listed for
// every one of them in hack/needs.txt. The first matching prefix wins.
var phasesOf = []struct {
	prefix string
	phases []string
}{
	{".ci/run", nil},      // runs before make deps: make and apt-get only, installed by itself
	{"hack/cold.sh", nil}, // undoes make deps by hand, then runs .ci/run (git, procps: the machine's)
	{"hack/deps.sh", []string{"deps"}},
	{"hack/fuzz.sh", []string{"fuzz"}},
	{"hack/bench-scale.sh", []string{"bench-scale"}},
	{"hack/bench-ab.sh", []string{"bench-ab"}},
	{"hack/bench-lazy.sh", []string{"bench-lazy", "bench"}}, // make bench runs it as a section
	{"hack/bench-tools.sh", []string{"bench", "bench-lazy", "soak-containerd"}},
	{"hack/bench", []string{"bench"}},
	{"hack/containerd.sh", []string{"bench", "bench-scale", "bench-lazy"}},
	{"hack/monitor-mem.sh", []string{"bench"}},
	{"hack/ccalls.sh", []string{"lint"}},
	{"hack/", []string{"critest", "e2e", "cluster", "conformance-ci", "bench", "bench-ab", "bench-lazy"}}, // instance.sh, lib.sh
	{"test/critest/", []string{"critest"}},
	{"test/e2e/", []string{"e2e", "e2e-evented"}},
	{"test/cluster/", []string{"cluster", "conformance-ci"}},
	{"test/conformance/", []string{"conformance-ci"}},
	{"test/vm/", []string{"vmtest-ci"}},
	{"test/bench/", []string{"bench", "bench-lazy"}},
	{"test/integration/", []string{"integration", "vmtest-ci"}},
	{"test/registry/", []string{"unit", "integration", "critest", "conformance-ci", "soak-ci", "soak", "soak-containerd"}},
	{"test/soak/containerd", []string{"soak-containerd"}},
	{"test/soak/", []string{"soak-ci", "soak", "soak-containerd"}},
	{"test/needs/", nil}, // this check
	{"test/", []string{"unit"}},
}

// phasesFor: a Go test file outside test/ runs in make unit; the daemon's own code in every
// phase that runs the daemon.
func phasesFor(rel string) []string {
	for _, p := range phasesOf {
		if strings.HasPrefix(rel, p.prefix) {
			return p.phases
		}
	}
	if strings.HasSuffix(rel, "_test.go") {
		return []string{"unit"}
	}
	if strings.HasSuffix(rel, ".go") {
		return Groups["daemon"]
	}
	return nil
}

// shellBuiltins are bash's builtins and keywords: never a program to install.
var shellBuiltins = strings.Fields(`: . [ [[ alias bg bind break builtin caller cd command compgen complete
	compopt continue declare dirs disown echo enable eval exec exit export false fc fg getopts hash help
	history jobs kill let local logout mapfile popd printf pushd pwd read readarray readonly return set
	shift shopt source suspend test times trap true type typeset ulimit umask unalias unset wait`)

// baseSystem: the programs of Debian's Essential and required packages, on every Debian
// machine before anything is installed.
func baseSystem(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("dpkg-query", "-W", "-f", "${Package}\t${Essential}\t${Priority}\n").Output()
	if err != nil {
		t.Fatalf("dpkg-query: %v (this check needs Debian's dpkg)", err)
	}
	var pkgs []string
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Split(l, "\t")
		if len(f) == 3 && (f[1] == "yes" || f[2] == "required") {
			pkgs = append(pkgs, f[0])
		}
	}
	files, err := exec.Command("dpkg-query", append([]string{"-L"}, pkgs...)...).Output()
	if err != nil {
		t.Fatalf("dpkg-query -L: %v", err)
	}
	base := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(files)))
	for sc.Scan() {
		if sysPath.MatchString(sc.Text()) {
			base[filepath.Base(sc.Text())] = true
		}
	}
	// alternatives (awk -> mawk): a name whose link leads to a base program
	alts, _ := filepath.Glob("/etc/alternatives/*")
	for _, a := range alts {
		if target, err := filepath.EvalSymlinks(a); err == nil && base[filepath.Base(target)] {
			base[filepath.Base(a)] = true
		}
	}
	return base
}

// allUses scans the repository: every program run, and every shell function defined.
func allUses(t *testing.T) ([]Use, map[string]bool) {
	t.Helper()
	shell, gofiles, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string]bool{}
	var uses []Use
	for _, f := range shell {
		u, fn, err := ShellUses(filepath.Join(root, f), f)
		if err != nil {
			t.Fatal(err)
		}
		uses = append(uses, u...)
		for _, n := range fn {
			funcs[n] = true
		}
	}
	for _, f := range gofiles {
		u, err := GoUses(filepath.Join(root, f), f)
		if err != nil {
			t.Fatal(err)
		}
		uses = append(uses, u...)
	}
	return uses, funcs
}

// TestEveryProgramIsDeclared fails when a script or Go file runs a program that
// hack/needs.txt does not list for the phase that runs it (nor is part of every Debian
// system, a shell builtin, a function of the scripts or a program the project builds).
func TestEveryProgramIsDeclared(t *testing.T) {
	rows, err := Parse(filepath.Join(root, "hack/needs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	declared := ByProgram(rows)
	base := baseSystem(t)
	uses, funcs := allUses(t)
	ignore := map[string]bool{}
	for _, b := range shellBuiltins {
		ignore[b] = true
	}
	for _, p := range ownPrograms {
		ignore[p] = true
	}
	missing := map[string][]string{}
	for _, u := range uses {
		if ignore[u.Program] || funcs[u.Program] || base[u.Program] {
			continue
		}
		for _, ph := range phasesFor(u.File) {
			if !declared[u.Program][ph] {
				missing[u.Program+" (phase "+ph+")"] = append(missing[u.Program+" (phase "+ph+")"], u.File)
				break
			}
		}
	}
	if os.Getenv("NEEDS_REPORT") != "" {
		report(t, uses, funcs, base, ignore)
	}
	keys := make([]string, 0, len(missing))
	for k := range missing {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Errorf("hack/needs.txt does not list %s, run by %s", k, strings.Join(uniq(missing[k]), " "))
	}
}

// TestNoStaleNeeds: every program of hack/needs.txt is still run somewhere (a row for a
// program nothing runs is a package installed for nothing).
func TestNoStaleNeeds(t *testing.T) {
	rows, err := Parse(filepath.Join(root, "hack/needs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	uses, _ := allUses(t)
	used := map[string]bool{}
	for _, u := range uses {
		used[u.Program] = true
	}
	for _, r := range rows {
		if strings.HasPrefix(r.Program, "/") {
			continue // a file (a header cgo includes), not a program
		}
		if !used[r.Program] && !indirect[r.Program] {
			t.Errorf("hack/needs.txt:%d: nothing runs %s any more", r.Line, r.Program)
		}
	}
}

func uniq(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func report(t *testing.T, uses []Use, funcs, base, ignore map[string]bool) {
	by := map[string][]string{}
	for _, u := range uses {
		if ignore[u.Program] || funcs[u.Program] || base[u.Program] {
			continue
		}
		by[u.Program] = append(by[u.Program], u.File)
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%-24s %s", k, strings.Join(uniq(by[k]), " "))
	}
}

// ownPrograms are built by the project or by the phase that runs them (test/e2e/tools.sh,
// test/conformance/tools.sh, test/cluster/tools.sh build from the Go module proxy).
var ownPrograms = []string{"minicri", "minicri-pause", "minicri-monitor", "minicri-monitor-helper",
	"cribench", "kubelet", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl",
	"kube-proxy", "etcd", "e2e.test", "ginkgo", "agnhost", "coredns",
	"registry",      // test/registry, built by the phases that serve images
	"e2e-ckptimage"} // test/e2e/ckptimage, built by test/e2e/ckpt.sh

// indirect are run by other programs, through a variable, or in the VM guest, not by a
// name the scan sees (their rows keep them installed).
var indirect = map[string]bool{
	"iptables": true,                                                        // by the CNI bridge and portmap plugins
	"bridge":   true, "host-local": true, "portmap": true, "loopback": true, // by libcni
	"critest":                 true,                                                     // test/critest/run.sh: $CRITEST
	"containerd-shim-runc-v2": true,                                                     // by containerd (make soak-containerd)
	"containerd-stargz-grpc":  true,                                                     // hack/containerd.sh: $CTRD_STARGZ
	"golangci-lint":           true,                                                     // the Makefile's lint target
	"modprobe":                true, "busybox": true, "dbus-daemon": true, "sudo": true, // in the VM guest
}

// TestCheckNamesWhatIsMissing performs what issue 20 found: a program of a phase is not
// installed. `hack/deps.sh check PHASE` (the first step of that phase's make target) must
// fail and name it, for every Debian-packaged program of the phases below.
func TestCheckNamesWhatIsMissing(t *testing.T) {
	rows, err := Parse(filepath.Join(root, "hack/needs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// A PATH of symlinks to every program of the system's bin directories.
	farm := t.TempDir()
	for _, dir := range []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			_ = os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(farm, e.Name())) // first one wins
		}
	}
	_ = os.Symlink("/usr/local/go/bin/go", filepath.Join(farm, "go"))
	deps, _ := filepath.Abs(filepath.Join(root, "hack/deps.sh"))
	check := func(phase string) (string, error) {
		cmd := exec.Command("/bin/bash", deps, "check", phase)
		cmd.Env = []string{"PATH=" + farm, "HOME=/root"}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, phase := range []string{"unit", "e2e", "vmtest-ci"} {
		for _, r := range rows {
			if !hasPhase(r, phase) || strings.HasPrefix(r.Provider, "@") || strings.HasPrefix(r.Program, "/") {
				continue
			}
			link := filepath.Join(farm, r.Program)
			target, err := os.Readlink(link)
			if err != nil {
				t.Errorf("%s of phase %s is not installed here (make deps installs %s)", r.Program, phase, r.Provider)
				continue
			}
			if err := os.Remove(link); err != nil {
				t.Fatal(err)
			}
			out, err := check(phase)
			want := "make " + phase + ": missing "
			if err == nil || !strings.Contains(out, want) || !strings.Contains(out, r.Program+" (package "+r.Provider+")") {
				t.Errorf("without %s: hack/deps.sh check %s: err %v, output %q; want a failure naming it", r.Program, phase, err, out)
			}
			if strings.Count(out, "\n") != 1 {
				t.Errorf("without %s: want one line, got %q", r.Program, out)
			}
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func hasPhase(r Need, phase string) bool {
	for _, p := range r.Phases {
		if p == phase {
			return true
		}
	}
	return false
}
