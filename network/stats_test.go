package network

import (
	"os"
	"testing"
)

func TestPodInterfaceStatsReadsOwnNamespace(t *testing.T) {
	stats, err := PodInterfaceStats(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stats {
		if s.Name == "lo" || s.Name == "" {
			t.Fatalf("unexpected interface %q", s.Name)
		}
	}
	if _, err := PodInterfaceStats(0x7ffffff0); err == nil {
		t.Fatal("a missing process must be an error")
	}
}
