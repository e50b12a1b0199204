package container

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/minicri/minicri/monitor"
)

// What make soak found (issue 23): with the root full, a container that had
// exited (its monitor's exit.json written on the state dir) read RUNNING for
// as long as its record could not be rewritten. The exit is durable in
// exit.json, so it is reported at once; the record follows when it can.
func TestExitIsReportedWhileItsRecordCannotBeWritten(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	m := &Manager{opts: Options{Root: root, State: state}, log: slog.New(slog.DiscardHandler), store: newStore()}
	// The record's directory is a file: every write of the record fails, as on a full disk.
	if err := os.WriteFile(filepath.Join(root, "blocked"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	recPath := filepath.Join(root, "blocked", recordFile)
	c := newContainer(Record{ID: "gone", Status: Status{State: StateRunning}}, recPath)
	m.store.add(c)
	dir := m.ctrStateDir("gone")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(monitor.Exit{Code: 37, FinishedAt: time.Now()})
	if err := os.WriteFile(monitor.ExitPath(dir), b, 0o600); err != nil {
		t.Fatal(err)
	}

	st := m.refresh(c)
	if st.State != StateExited || st.ExitCode != 37 || st.Reason != ReasonError {
		t.Fatalf("with its record unwritable: %+v, want exited 37 (Error)", st)
	}
	if c.Status().State != StateRunning {
		t.Fatalf("published %v without writing the record", c.Status().State)
	}

	// Space again: the next read writes the record and publishes the exit.
	if err := os.Remove(filepath.Join(root, "blocked")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(recPath), 0o700); err != nil {
		t.Fatal(err)
	}
	if st := m.refresh(c); st.State != StateExited || st.ExitCode != 37 || c.Status().State != StateExited {
		t.Fatalf("after space came back: %+v, published %v", st, c.Status().State)
	}
	if _, err := os.Stat(recPath); err != nil {
		t.Fatalf("record not written: %v", err)
	}
}
