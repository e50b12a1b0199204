package published

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/minicri/minicri/internal/atomicfile"
)

type doc struct{ N int }

func TestUpdatePersistsBeforePublishing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "v.json")
	v := New(0, p, func(n int) any { return doc{n} })
	if _, err := v.Update(func(n int) (int, error) { return n + 1, nil }); err != nil {
		t.Fatal(err)
	}
	var d doc
	if err := atomicfile.ReadJSON(p, &d); err != nil || d.N != 1 || v.Load() != 1 {
		t.Fatalf("disk %v (%v), memory %d", d, err, v.Load())
	}
}

func TestFailedWriteKeepsOldValue(t *testing.T) {
	dir := t.TempDir()
	v := New(5, filepath.Join(dir, "gone", "v.json"), func(n int) any { return doc{n} })
	if _, err := v.Update(func(n int) (int, error) { return 6, nil }); err == nil {
		t.Fatal("write into a missing dir must fail")
	}
	if v.Load() != 5 {
		t.Fatalf("unpersisted value published: %d", v.Load())
	}
	if _, err := v.Update(func(n int) (int, error) { return 0, errors.New("no") }); err == nil || v.Load() != 5 {
		t.Fatal("a refused update must change nothing")
	}
	if _, err := os.Stat(filepath.Join(dir, "gone")); !os.IsNotExist(err) {
		t.Fatal("unexpected dir")
	}
}

func TestConcurrentUpdatesAreSerialised(t *testing.T) {
	v := New(0, filepath.Join(t.TempDir(), "v.json"), func(n int) any { return doc{n} })
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v.Update(func(n int) (int, error) { return n + 1, nil })
		}()
	}
	wg.Wait()
	if v.Load() != 50 {
		t.Fatalf("lost updates: %d", v.Load())
	}
}
