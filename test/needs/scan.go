package needs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Use is one place where the project runs an external program.
type Use struct {
	Program string
	File    string // relative to the repository
	Line    int
}

func (u Use) String() string { return fmt.Sprintf("%s:%d: %s", u.File, u.Line, u.Program) }

// ShellUses parses a shell script and returns the commands it runs (the first word of
// every simple command, through wrappers such as nice, timeout or `ip netns exec`), and the
// names of the functions it defines.
func ShellUses(file, rel string) (uses []Use, funcs []string, err error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	f, err := syntax.NewParser(syntax.KeepComments(false), syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(string(src)), rel)
	if err != nil {
		return nil, nil, fmt.Errorf("parse %s: %w", rel, err)
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.FuncDecl:
			funcs = append(funcs, n.Name.Value)
		case *syntax.CallExpr:
			if prog, line, ok := commandOf(n.Args); ok {
				uses = append(uses, Use{Program: prog, File: rel, Line: line})
			}
		}
		return true
	})
	return uses, funcs, nil
}

// wrappers run the command that follows their own options; the value is how many
// operands they take before it.
var wrappers = map[string]int{
	"exec": 0, "nice": 0, "nohup": 0, "setsid": 0, "env": 0, "sudo": 0, "xargs": 0, "time": 0,
	"timeout": 1, "stdbuf": 0, "chroot": 1, "unshare": 0, "nsenter": 0, "flock": 1, "taskset": 1,
	"builtin": 0,
}

// optsWithValue are options of the wrappers that take the next word as their value.
var optsWithValue = map[string]bool{"-n": true, "-s": true, "-k": true, "-t": true, "-u": true,
	"-I": true, "-P": true, "-L": true, "--signal": true, "--kill-after": true, "-o": true, "-e": true}

// commandOf returns the program a simple command runs, when its name is a literal.
func commandOf(args []*syntax.Word) (string, int, bool) {
	for i := 0; i < len(args); i++ {
		w := args[i].Lit()
		if w == "" {
			// "$GO", "${cmd[@]}": not a literal name; "$TOOLS/critest": its last element
			p := lastElem(args[i])
			return p, int(args[i].Pos().Line()), p != ""
		}
		line := int(args[i].Pos().Line())
		switch {
		case w == "command" && i+1 < len(args) && args[i+1].Lit() == "-v":
			if i+2 < len(args) && args[i+2].Lit() != "" {
				return programName(args[i+2].Lit()), int(args[i+2].Pos().Line()), programName(args[i+2].Lit()) != ""
			}
			return "", 0, false
		case w == "ip" && i+3 < len(args) && args[i+1].Lit() == "netns" && args[i+2].Lit() == "exec":
			// ip netns exec NS CMD: ip itself, and CMD
			return "ip", line, true
		}
		n, isWrapper := wrappers[w]
		if !isWrapper {
			p := programName(w)
			return p, line, p != ""
		}
		if w == "exec" && i+1 == len(args) {
			return "", 0, false // exec >file: redirections only
		}
		// skip the wrapper's options and operands: the rest is the command.
		j := i + 1
		for j < len(args) {
			a := args[j].Lit()
			if strings.HasPrefix(a, "-") {
				if optsWithValue[a] {
					j++
				}
				j++
				continue
			}
			if w == "env" && strings.Contains(a, "=") {
				j++
				continue
			}
			break
		}
		j += n
		if w == "nsenter" || w == "unshare" || w == "sudo" || w == "builtin" || j >= len(args) {
			// the wrapper is the program (a wrapped command is rare there; nsenter's options
			// are too many to follow)
			if w == "builtin" || w == "exec" || w == "time" {
				return "", 0, false
			}
			return w, line, true
		}
		// a use of the wrapper itself (nice, timeout, ...) and then the wrapped command
		i = j - 1
	}
	return "", 0, false
}

// programName: the program a command word names; "" for a path into the project
// ("$ROOT/bin/minicri", "./x", "bin/minicri") and for assignments.
func programName(w string) string {
	switch {
	case strings.Contains(w, "="):
		return ""
	case strings.HasPrefix(w, "/"):
		if sysPath.MatchString(w) {
			return path.Base(w)
		}
		return ""
	case strings.Contains(w, "/"):
		return ""
	}
	return w
}

// lastElem: the program a word like "$OUT/tools/critest" or $dir/server runs: its last
// element when that is literal; "" for a script of the project (*.sh) or a word whose end
// is not literal.
func lastElem(w *syntax.Word) string {
	parts := w.Parts
	if len(parts) == 1 {
		if dq, ok := parts[0].(*syntax.DblQuoted); ok {
			parts = dq.Parts
		}
	}
	if len(parts) < 2 {
		return ""
	}
	lit, ok := parts[len(parts)-1].(*syntax.Lit)
	if !ok || !strings.HasPrefix(lit.Value, "/") || strings.HasSuffix(lit.Value, ".sh") {
		return ""
	}
	return path.Base(lit.Value)
}

var sysPath = regexp.MustCompile(`^/(usr/)?(local/)?s?bin/[^/]+$`)

// GoUses returns the programs a Go file runs: the literal name given to exec.Command,
// exec.CommandContext and exec.LookPath, and, outside tests, every string literal that is
// a path in a system bin directory ("/usr/bin/socat": a host program copied into an
// image). A line that says needs:ignore is not scanned (a path inside an image).
func GoUses(file, rel string) ([]Use, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(src), "\n")
	isTest := strings.HasSuffix(file, "_test.go")
	var uses []Use
	add := func(lit *ast.BasicLit, onlyPaths bool) {
		if lit == nil || lit.Kind != token.STRING || (onlyPaths && isTest) {
			return
		}
		if l := fset.Position(lit.Pos()).Line; l <= len(lines) && strings.Contains(lines[l-1], "needs:ignore") {
			return
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			return
		}
		s, _, _ = strings.Cut(s, ":") // "/bin/nc.openbsd:/usr/local/bin/nc"
		var p string
		if sysPath.MatchString(s) && !strings.HasPrefix(s, "/usr/local/") {
			p = path.Base(s)
		} else if !onlyPaths && !strings.ContainsAny(s, "/ ") && s != "" {
			p = s
		}
		if p != "" {
			uses = append(uses, Use{Program: p, File: rel, Line: fset.Position(lit.Pos()).Line})
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "exec" {
				return true
			}
			arg := 0
			switch sel.Sel.Name {
			case "Command", "LookPath":
			case "CommandContext":
				arg = 1
			default:
				return true
			}
			if len(n.Args) > arg {
				lit, _ := n.Args[arg].(*ast.BasicLit)
				add(lit, false)
			}
		case *ast.BasicLit:
			add(n, true)
		}
		return true
	})
	return dedupe(uses), nil
}

func dedupe(uses []Use) []Use {
	seen := map[string]bool{}
	var out []Use
	for _, u := range uses {
		k := u.String()
		if !seen[k] {
			seen[k] = true
			out = append(out, u)
		}
	}
	return out
}

// Files lists the repository's shell scripts and Go files that the check covers: every
// *.sh and .ci/run, every non-generated .go file, but _output, testdata and bin.
func Files(root string) (shell, gofiles []string, err error) {
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			switch d.Name() {
			case "_output", "testdata", "bin", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(rel, ".sh") || rel == ".ci/run":
			shell = append(shell, rel)
		case strings.HasSuffix(rel, ".go"):
			gofiles = append(gofiles, rel)
		}
		return nil
	})
	return shell, gofiles, err
}
