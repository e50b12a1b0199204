package pidns

import (
	"strings"
	"testing"
)

func TestCappedBufferKeepsTheFirstBytes(t *testing.T) {
	b := &cappedBuffer{max: 5}
	for _, s := range []string{"abc", "defgh", "ijk"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := b.String(); got != "abcde" {
		t.Errorf("kept %q, want abcde", got)
	}
}

func TestReserveRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{nil, {"1", "2"}, {"0"}, {"-1"}, {"x"}, {"2147483648"}} {
		if err := reserve(args); err == nil || !strings.Contains(err.Error(), "pid") {
			t.Errorf("reserve(%q) = %v, want a refusal", args, err)
		}
	}
}
