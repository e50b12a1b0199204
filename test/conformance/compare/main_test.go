package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func report(t *testing.T, cases string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(p, []byte(`<testsuites><testsuite name="Kubernetes e2e suite">`+cases+`</testsuite></testsuites>`), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCompare(t *testing.T) {
	a, err := load("minicri=" + report(t, `
<testcase name="[It] both pass" status="passed"></testcase>
<testcase name="[It] a fails" status="failed"><failure message="x"></failure></testcase>
<testcase name="[It] b fails" status="passed"></testcase>
<testcase name="[It] a only" status="passed"></testcase>
<testcase name="[It] out of focus" status="skipped"><skipped></skipped></testcase>
<testcase name="[BeforeSuite]" status="passed"></testcase>`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := load("containerd=" + report(t, `
<testcase name="[It] both pass" status="passed"></testcase>
<testcase name="[It] a fails" status="passed"></testcase>
<testcase name="[It] b fails" status="timedout"></testcase>
<testcase name="[It] b only" status="passed"></testcase>
<testcase name="[It] out of focus" status="skipped"><skipped></skipped></testcase>`))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := compare(&out, a, b); code != 1 {
		t.Errorf("exit code %d, want 1 (a spec passed on containerd and failed on minicri)", code)
	}
	for _, want := range []string{
		"minicri      ran 4: passed 3, failed 1",
		"containerd   ran 4: passed 3, failed 1",
		"ran on both: 3, passed on both: 1, failed on both: 0",
		"passed on containerd, failed on minicri: 1\n    [It] a fails\n",
		"passed on minicri, failed on containerd: 1\n    [It] b fails\n",
		"ran on minicri only: 1\n    [It] a only\n",
		"ran on containerd only: 1\n    [It] b only\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if code := compare(&bytes.Buffer{}, b, a); code != 1 {
		t.Errorf("reversed: exit code %d, want 1", code)
	}
	if code := compare(&bytes.Buffer{}, a, a); code != 0 {
		t.Errorf("a run against itself: exit code %d, want 0", code)
	}
	if _, err := load("no-equals-sign"); err == nil {
		t.Error("a bad argument was accepted")
	}
}
