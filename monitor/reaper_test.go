package monitor

import (
	"log/slog"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestReaperCollectsOrphansButNotKnownChildren(t *testing.T) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Skip("cannot become a subreaper:", err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	r := newReaper(slog.Default())
	// A known child that exits: its zombie is left for its waiter.
	known := exec.Command("true")
	done := r.starting()
	if err := known.Start(); err != nil {
		t.Fatal(err)
	}
	r.trackLocked(known.Process.Pid)
	done()
	// An orphan: sh exits at once, its background sleep is re-parented to us.
	if err := exec.Command("sh", "-c", "sleep 0.2 & exit 0").Run(); err != nil {
		t.Fatal(err)
	}
	var orphan int
	deadline := time.Now().Add(5 * time.Second)
	for orphan == 0 && time.Now().Before(deadline) {
		for _, pid := range children() {
			if pid != known.Process.Pid {
				orphan = pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if orphan == 0 {
		t.Fatal("the orphan never became our child")
	}
	for !zombie(orphan) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	for !zombie(known.Process.Pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	r.reapOrphans()
	if zombie(orphan) {
		t.Fatal("the orphan was not reaped")
	}
	if !zombie(known.Process.Pid) {
		t.Fatal("a known child was reaped behind its waiter's back")
	}
	if err := known.Wait(); err != nil {
		t.Fatalf("the known child's waiter lost its status: %v", err)
	}
	r.untrack(known.Process.Pid)
}
