package image

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFsInfoIsCachedUntilTheStoreChanges(t *testing.T) {
	s, err := New(Config{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	before, err := s.FsInfo()
	if err != nil {
		t.Fatal(err)
	}
	// A file appearing behind the store's back is not seen until a change
	// the store itself makes (pull, remove, GC) bumps its generation.
	if err := os.WriteFile(filepath.Join(s.cfg.Root, "extra"), make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	cached, _ := s.FsInfo()
	if cached.UsedBytes != before.UsedBytes || cached.InodesUsed != before.InodesUsed {
		t.Fatalf("FsInfo walked again without a change: %+v vs %+v", cached, before)
	}
	if cached.Timestamp < before.Timestamp {
		t.Fatal("timestamp must move on")
	}
	if err := s.GC(); err != nil {
		t.Fatal(err)
	}
	after, _ := s.FsInfo()
	if after.UsedBytes <= before.UsedBytes || after.InodesUsed != before.InodesUsed+1 {
		t.Fatalf("after GC the new file must be counted: %+v vs %+v", after, before)
	}
}
