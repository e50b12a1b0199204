package apparmor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestListed(t *testing.T) {
	list := "docker-default (enforce)\nminicri-default (enforce)\n/usr/bin/man (complain)\nwith space (enforce)\n"
	for name, want := range map[string]bool{
		"minicri-default": true, "/usr/bin/man": true, "with space": true,
		"minicri": false, "enforce": false, "": false, "docker-default (enforce)": false,
	} {
		got, err := listed(strings.NewReader(list), name)
		if err != nil || got != want {
			t.Errorf("listed(%q) = %v, %v; want %v", name, got, err, want)
		}
	}
}

func TestGenerate(t *testing.T) {
	policy := t.TempDir()
	text, err := generate("p1", "minicri-daemon", policy)
	if err != nil {
		t.Fatal(err)
	}
	s := string(text)
	for _, want := range []string{
		"profile p1 flags=(attach_disconnected,mediate_deleted) {",
		"@{PROC}=/proc/", "deny mount,", "signal (receive) peer=minicri-daemon,",
		"signal (send,receive) peer=p1,", "ptrace (trace,read,tracedby,readby) peer=p1,",
		"deny @{PROC}/sys/kernel/{?,??,[^s][^h][^m]**} w,",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("profile lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "#include") {
		t.Errorf("includes what the host does not have:\n%s", s)
	}
	for _, f := range []string{"tunables/global", "abstractions/base"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(policy, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(policy, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text, _ = generate("p1", "unconfined", policy)
	s = string(text)
	if !strings.Contains(s, "#include <tunables/global>") || !strings.Contains(s, "  #include <abstractions/base>") ||
		strings.Contains(s, "@{PROC}=/proc/") {
		t.Errorf("host abstractions not used:\n%s", s)
	}
}

// fakeHost is a Host whose kernel list and parser are files in a temp dir:
// the parser script logs its arguments and "loads" the profile by adding
// it to the list.
func fakeHost(t *testing.T, enabled bool) (*Host, string) {
	t.Helper()
	dir := t.TempDir()
	list := filepath.Join(dir, "profiles")
	if err := os.WriteFile(list, []byte("other (enforce)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	parser := filepath.Join(dir, "parser")
	script := "#!/bin/sh\necho \"$@\" >>" + dir + "/calls\n" +
		"grep -q '^minicri-default ' " + list + " || echo 'minicri-default (enforce)' >>" + list + "\n"
	if err := os.WriteFile(parser, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	label := filepath.Join(dir, "current")
	if err := os.WriteFile(label, []byte("unconfined\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := New(Options{Dir: filepath.Join(dir, "state"), Enabled: &enabled, ProfilesFile: list,
		PolicyDir: dir, Parser: parser, SelfLabel: label})
	return h, dir
}

func calls(t *testing.T, dir string) []string {
	b, err := os.ReadFile(filepath.Join(dir, "calls"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestDefaultProfileLoadsOnce: loaded with -Kr on first use; a new daemon
// (a new Host on the same state dir) finds it loaded and runs no parser;
// a changed profile or one gone from the kernel (reboot) is loaded again.
func TestDefaultProfileLoadsOnce(t *testing.T) {
	h, dir := fakeHost(t, true)
	name, err := h.DefaultProfile()
	if err != nil || name != DefaultProfileName {
		t.Fatalf("DefaultProfile = %q, %v", name, err)
	}
	c := calls(t, dir)
	if len(c) != 1 || !strings.HasPrefix(c[0], "-Kr "+filepath.Join(dir, "state")) {
		t.Fatalf("parser calls %q, want one -Kr of a file in the state dir", c)
	}
	if _, err := h.DefaultProfile(); err != nil {
		t.Fatal(err)
	}
	h2 := New(h.opts)
	if _, err := h2.DefaultProfile(); err != nil {
		t.Fatal(err)
	}
	if c := calls(t, dir); len(c) != 1 {
		t.Fatalf("parser ran %d times, want once: %q", len(c), c)
	}

	// A different profile text (minicri confined differently, or upgraded).
	os.WriteFile(h.opts.SelfLabel, []byte("minicri (enforce)\n"), 0o644)
	if _, err := New(h.opts).DefaultProfile(); err != nil {
		t.Fatal(err)
	}
	if c := calls(t, dir); len(c) != 2 {
		t.Fatalf("changed profile: parser ran %d times, want 2", len(c))
	}
	// Gone from the kernel.
	os.WriteFile(h.opts.ProfilesFile, []byte("other (enforce)\n"), 0o644)
	if _, err := New(h.opts).DefaultProfile(); err != nil {
		t.Fatal(err)
	}
	if c := calls(t, dir); len(c) != 3 {
		t.Fatalf("unloaded profile: parser ran %d times, want 3", len(c))
	}
}

// TestDefaultProfileWithoutParser: an AppArmor host without apparmor_parser
// gives an error naming it, and a later call tries again.
func TestDefaultProfileWithoutParser(t *testing.T) {
	h, dir := fakeHost(t, true)
	parser := h.opts.Parser
	h.opts.Parser = filepath.Join(dir, "absent")
	_, err := h.DefaultProfile()
	if err == nil || !strings.Contains(err.Error(), "apparmor_parser") {
		t.Fatalf("error %v, want one naming apparmor_parser", err)
	}
	if _, err := os.Stat(filepath.Join(h.opts.Dir, DefaultProfileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a profile that was not loaded is recorded as loaded: %v", err)
	}
	h.opts.Parser = parser
	if _, err := h.DefaultProfile(); err != nil {
		t.Fatalf("after the parser appeared: %v", err)
	}
}

// TestFailedLoadIsNotRecorded: a parser error leaves no record, so a
// stale profile of the same name in the kernel is not taken for ours.
func TestFailedLoadIsNotRecorded(t *testing.T) {
	h, _ := fakeHost(t, true)
	os.WriteFile(h.opts.ProfilesFile, []byte("minicri-default (enforce)\n"), 0o644) // someone else's
	os.WriteFile(h.opts.Parser, []byte("#!/bin/sh\necho 'syntax error' >&2\nexit 1\n"), 0o755)
	if _, err := h.DefaultProfile(); err == nil || !strings.Contains(err.Error(), "syntax error") {
		t.Fatalf("error %v, want the parser's output", err)
	}
	ents, _ := os.ReadDir(h.opts.Dir)
	if len(ents) != 0 {
		t.Fatalf("state dir holds %v after a failed load", ents)
	}
}

func TestDisabledHost(t *testing.T) {
	h, dir := fakeHost(t, false)
	h.Start()
	if _, err := h.DefaultProfile(); !errors.Is(err, ErrNotEnabled) {
		t.Fatalf("DefaultProfile: %v, want ErrNotEnabled", err)
	}
	if _, err := h.Loaded("other"); !errors.Is(err, ErrNotEnabled) {
		t.Fatalf("Loaded: %v, want ErrNotEnabled", err)
	}
	if c := calls(t, dir); len(c) != 0 {
		t.Fatalf("parser ran on a host without AppArmor: %q", c)
	}
}
