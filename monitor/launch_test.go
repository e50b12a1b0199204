package monitor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckPrograms(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "minicri")
	if err := CheckPrograms(exe); err == nil || !strings.Contains(err.Error(), BinaryName) {
		t.Fatalf("no programs: got %v, want an error naming %s", err, BinaryName)
	}
	for _, n := range []string{BinaryName, HelperBinaryName} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := CheckPrograms(exe); err == nil || !strings.Contains(err.Error(), "not an executable") {
		t.Fatalf("non-executable programs: got %v", err)
	}
	if err := os.Chmod(filepath.Join(dir, BinaryName), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckPrograms(exe); err == nil || !strings.Contains(err.Error(), HelperBinaryName) {
		t.Fatalf("helper not executable: got %v", err)
	}
	if err := os.Chmod(filepath.Join(dir, HelperBinaryName), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckPrograms(exe); err != nil {
		t.Fatalf("both present: %v", err)
	}
}
