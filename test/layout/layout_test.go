// Package layout checks the shape of the house that anyone can rerun with
// `go list`: which packages may import which, how big a room may grow and
// how long a function may be (docs/DESIGN.md, "Packages").
package layout

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/minicri/minicri"

// pkg is one package of the module as `go list` sees it.
type pkg struct {
	path    string   // relative to the module, e.g. "internal/steps"
	imports []string // direct imports inside the module, relative
	deps    []string // every dependency, module or not
}

// root is the module's top directory (this file is test/layout/layout_test.go).
func root(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// list runs `go list` over the module's non-test packages.
func list(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-f",
		"{{.ImportPath}}\t{{join .Imports \" \"}}\t{{join .Deps \" \"}}", "./...")
	cmd.Dir = root(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	var pkgs []pkg
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 3 {
			t.Fatalf("go list line %q", sc.Text())
		}
		p := pkg{path: rel(f[0]), deps: strings.Fields(f[2])}
		for _, imp := range strings.Fields(f[1]) {
			if strings.HasPrefix(imp, module+"/") {
				p.imports = append(p.imports, rel(imp))
			}
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

func rel(importPath string) string {
	return strings.TrimPrefix(strings.TrimPrefix(importPath, module), "/")
}

func under(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

// TestInternalImportsOnlyInternal: internal/ holds helpers that import
// nothing of the project outside internal/ (the ground floor never reaches up).
func TestInternalImportsOnlyInternal(t *testing.T) {
	seen := 0
	for _, p := range list(t) {
		if !under(p.path, "internal") {
			continue
		}
		seen++
		for _, imp := range p.imports {
			if !under(imp, "internal") {
				t.Errorf("%s imports %s: internal/ may import only internal/", p.path, imp)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no package under internal/")
	}
}

// TestAdaptersStayBelowTheDomain: the adapters of the host (OCI runtimes,
// cgroup driver, CDI, AppArmor, telemetry) never import a domain package
// (the rooms container/ builds on among them), the CRI edge or the daemon;
// each says so in its doc.go.
func TestAdaptersStayBelowTheDomain(t *testing.T) {
	forbidden := []string{"container", "sandbox", "network", "image", "monitor",
		"server", "streaming", "daemon", "checkpoint", "nri",
		"stats", "user", "devices", "security", "imagevolume", "execio", "secprofile", "cgroupmount"}
	adapters := map[string]bool{"ocirt": true, "cgdriver": true, "cdi": true,
		"apparmor": true, "telemetry": true}
	found := 0
	for _, p := range list(t) {
		if !adapters[p.path] {
			continue
		}
		found++
		for _, imp := range p.imports {
			for _, f := range forbidden {
				if under(imp, f) {
					t.Errorf("%s imports %s: an adapter must stay below the domain", p.path, imp)
				}
			}
		}
	}
	if found != len(adapters) {
		t.Fatalf("found %d of the %d adapter packages", found, len(adapters))
	}
}

// TestOnlyTheEdgeSpeaksGRPC: gRPC and the CRI types are reachable only from
// the edge (server, streaming, telemetry's interceptors, the daemon that
// wires them, the command) and the test tools; the domain knows nothing of them.
func TestOnlyTheEdgeSpeaksGRPC(t *testing.T) {
	edge := []string{"server", "streaming", "telemetry", "daemon", "cmd/minicri", "test"}
	for _, p := range list(t) {
		isEdge := false
		for _, e := range edge {
			if under(p.path, e) {
				isEdge = true
			}
		}
		if isEdge {
			continue
		}
		for _, d := range p.deps {
			if d == "google.golang.org/grpc" || strings.HasPrefix(d, "k8s.io/cri-api/") {
				t.Errorf("%s depends on %s: only the edge speaks gRPC and the CRI", p.path, d)
			}
		}
	}
}

// goFiles are the module's non-test Go files (the build outputs and caches
// under _output and bin are not the module's).
func goFiles(t *testing.T) []string {
	t.Helper()
	top := root(t)
	var files []string
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != top && (strings.HasPrefix(n, ".") || n == "_output" || n == "bin" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("found only %d Go files under %s", len(files), top)
	}
	return files
}

// TestFunctionsAreShort: no non-test function over 80 lines, and the median
// at most 12: functions read as a list of named steps.
func TestFunctionsAreShort(t *testing.T) {
	const maxLines, maxMedian = 80, 12
	var lengths []int
	for _, file := range goFiles(t) {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			lengths = append(lengths, n)
			if n > maxLines {
				t.Errorf("%s: %s is %d lines (at most %d)", fset.Position(fd.Pos()), fd.Name.Name, n, maxLines)
			}
		}
	}
	sort.Ints(lengths)
	if m := lengths[len(lengths)/2]; m > maxMedian {
		t.Errorf("median function length %d lines (at most %d)", m, maxMedian)
	}
	t.Logf("%d functions, median %d lines, longest %d", len(lengths), lengths[len(lengths)/2], lengths[len(lengths)-1])
}

// TestNRISeesTheDomainOnlyThroughHook: the NRI adapter sits above the
// domain without importing it (the domain packages define the hooks and the
// hook package the values they hand over); hook imports nothing of the project.
func TestNRISeesTheDomainOnlyThroughHook(t *testing.T) {
	importsOnly(t, map[string]func(string) bool{
		"nri":  func(imp string) bool { return imp == "hook" || under(imp, "internal") },
		"hook": func(string) bool { return false },
	}, "")
}

// importsOnly checks that each package allowed names exists and imports, of
// the module, only what its function accepts; why ends each complaint.
func importsOnly(t *testing.T, allowed map[string]func(string) bool, why string) {
	t.Helper()
	found := 0
	for _, p := range list(t) {
		ok, checked := allowed[p.path]
		if !checked {
			continue
		}
		found++
		for _, imp := range p.imports {
			if !ok(imp) {
				t.Errorf("%s imports %s%s", p.path, imp, why)
			}
		}
	}
	if found != len(allowed) {
		t.Fatalf("found %d of the packages %v", found, allowed)
	}
}

// TestContainerRoomsStayBelowIt: the packages container/ builds a container
// from never import container/ (no cycle, no reaching back up) nor any
// other domain package, the edge or the daemon: each imports of the project
// only what its doc.go names.
func TestContainerRoomsStayBelowIt(t *testing.T) {
	onlyInternal := func(imp string) bool { return under(imp, "internal") }
	importsOnly(t, map[string]func(string) bool{
		"stats":       func(imp string) bool { return imp == "cgdriver" || onlyInternal(imp) },
		"user":        onlyInternal,
		"devices":     onlyInternal,
		"security":    onlyInternal,
		"cgroupmount": onlyInternal,
		"imagevolume": func(imp string) bool { return imp == "image" || onlyInternal(imp) },
		"execio":      func(imp string) bool { return imp == "ocirt" || onlyInternal(imp) },
	}, ": a room below container/ must stay below it")
}

// TestSecProfileStaysARoom: the store of pulled security profiles
// (KEP-6061) is a domain room of its own: of the project it imports only
// image (the registry access of image pulls) and internal/ helpers, as its
// doc.go says; container/ and sandbox/ see it through their own
// interfaces, wired by the daemon, and never import it.
func TestSecProfileStaysARoom(t *testing.T) {
	importsOnly(t, map[string]func(string) bool{
		"secprofile": func(imp string) bool { return imp == "image" || under(imp, "internal") },
	}, ": secprofile imports of the project only image and internal/")
	for _, p := range list(t) {
		if p.path != "container" && p.path != "sandbox" && p.path != "security" {
			continue
		}
		for _, imp := range p.imports {
			if under(imp, "secprofile") {
				t.Errorf("%s imports %s: it sees the profile store through its own interface", p.path, imp)
			}
		}
	}
}

// TestContainerPackageStaysSmall: container/ holds what a container is
// (config to spec, rootfs, lifecycle, exec, its stats); a concern that
// grows goes to a room of its own. Counted as
// `find container -name '*.go' ! -name '*_test.go' | xargs cat | wc -l`.
func TestContainerPackageStaysSmall(t *testing.T) {
	const maxLines = 4500
	dir := filepath.Join(root(t), "container")
	lines, files := 0, 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		lines += bytes.Count(data, []byte("\n"))
		files++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatalf("no Go file under %s", dir)
	}
	if lines > maxLines {
		t.Errorf("container/ has %d non-test Go lines in %d files (at most %d): give a concern a package of its own", lines, files, maxLines)
	}
	t.Logf("container/: %d non-test Go lines in %d files", lines, files)
}
