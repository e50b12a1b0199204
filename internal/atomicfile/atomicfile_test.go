package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	if err := WriteJSON(p, map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(p, map[string]int{"a": 2}); err != nil {
		t.Fatal(err)
	}
	var got map[string]int
	if err := ReadJSON(p, &got); err != nil || got["a"] != 2 {
		t.Fatalf("got %v, %v", got, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temp files left: %v", entries)
	}
	st, _ := os.Stat(p)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
}

func TestRemoveTemps(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ".state.json.tmp-123"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(dir, "keep"), []byte("x"), 0o600)
	RemoveTemps(dir)
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "keep" {
		t.Fatalf("left %v", entries)
	}
}

func TestWriteFailsInMissingDir(t *testing.T) {
	if err := Write(filepath.Join(t.TempDir(), "no", "x"), nil, 0o600); err == nil {
		t.Fatal("want error")
	}
}

func TestScanRecords(t *testing.T) {
	type rec struct{ ID string }
	dir := t.TempDir()
	for id, body := range map[string]string{"a": `{"ID":"a"}`, "b": `{"ID":"x"}`, "c": `not json`} {
		os.MkdirAll(filepath.Join(dir, id), 0o700)
		os.WriteFile(filepath.Join(dir, id, "r.json"), []byte(body), 0o600)
	}
	os.MkdirAll(filepath.Join(dir, "d"), 0o700) // no record at all
	var good, bad []string
	known, err := ScanRecords(dir, "r.json", func(r *rec) string { return r.ID },
		func(id string, _ *rec) { good = append(good, id) },
		func(id string, _ error) { bad = append(bad, id) })
	if err != nil || len(known) != 1 || !known["a"] || len(good) != 1 || len(bad) != 3 {
		t.Fatalf("known %v good %v bad %v err %v", known, good, bad, err)
	}
}
