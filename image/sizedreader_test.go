package image

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

func TestSizedReader(t *testing.T) {
	for _, c := range []struct {
		body    string
		size    int64
		wantErr string
	}{
		{"exactly", 7, ""},
		{"longer than said", 6, "longer than the manifest's size"},
		{"short", 9, "4 bytes short"},
		{"", 0, ""},
		// A manifest may declare any size: the largest must not overflow
		// (it made left+1 negative and the slice bound panic the daemon).
		{"huge", math.MaxInt64, "short of the manifest's size"},
	} {
		r := &sizedReader{r: strings.NewReader(c.body), left: c.size, digest: "sha256:x"}
		got, err := io.ReadAll(io.MultiReader(r)) // ReadAll stops at the first error
		switch {
		case c.wantErr == "" && (err != nil || !bytes.Equal(got, []byte(c.body))):
			t.Errorf("%q (size %d): %q, %v", c.body, c.size, got, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%q (size %d): error %v, want %q", c.body, c.size, err, c.wantErr)
		}
		if c.wantErr == "4 bytes short" && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("a short blob's error is not io.ErrUnexpectedEOF: %v", err)
		}
	}
}
