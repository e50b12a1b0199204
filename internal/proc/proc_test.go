package proc

import (
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestHandleLifecycle(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ref, err := RefOf(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	h, err := Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if !h.Alive() {
		t.Fatal("running process reported dead")
	}
	go cmd.Wait()
	if err := h.Kill(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if h.Alive() {
		t.Fatal("killed process reported alive")
	}
}

func TestOpenRejectsReusedPID(t *testing.T) {
	ref, err := RefOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	ref.StartTime++
	if _, err := Open(ref); !errors.Is(err, ErrGone) {
		t.Fatalf("a wrong start time must read as gone, got %v", err)
	}
	if err := KillRef(ref, time.Second); err != nil {
		t.Fatalf("KillRef of a gone process: %v", err)
	}
}

func TestSetOOMScoreAdjClamps(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	own, err := OwnOOMScoreAdj()
	if err != nil {
		t.Fatal(err)
	}
	got, err := SetOOMScoreAdj(cmd.Process.Pid, -1000)
	if err != nil {
		t.Fatalf("a too-low value must be clamped, not fail: %v", err)
	}
	// Clamped only where the kernel refuses -1000: then to the own value.
	if floor := OOMScoreAdjFloor(); floor == -1000 && got != -1000 {
		t.Fatalf("wrote %d though -1000 may be set", got)
	} else if floor != -1000 && got != own {
		t.Fatalf("wrote %d, want own %d where -1000 is refused", got, own)
	}
	if after, _ := OwnOOMScoreAdj(); after != own {
		t.Fatalf("the floor probe left own oom_score_adj at %d, was %d", after, own)
	}
	got, err = SetOOMScoreAdj(cmd.Process.Pid, 500)
	if err != nil || got != 500 {
		t.Fatalf("got %d, %v", got, err)
	}
}
