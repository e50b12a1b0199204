package idindex

import (
	"errors"
	"testing"
)

func TestGet(t *testing.T) {
	x := New[int]()
	x.Add("abc123", 1)
	x.Add("abd456", 2)
	cases := []struct {
		key  string
		want int
		err  error
	}{
		{"abc123", 1, nil}, {"abc", 1, nil}, {"abd", 2, nil},
		{"ab", 0, ErrAmbiguous}, {"zz", 0, ErrNotFound}, {"", 0, ErrEmpty},
	}
	for _, c := range cases {
		got, err := x.Get(c.key)
		if got != c.want || !errors.Is(err, c.err) {
			t.Errorf("Get(%q) = %d, %v; want %d, %v", c.key, got, err, c.want, c.err)
		}
	}
	x.Delete("abc123")
	if _, err := x.Get("abc"); !errors.Is(err, ErrNotFound) || x.Len() != 1 || len(x.All()) != 1 {
		t.Fatalf("after delete: %v len %d", err, x.Len())
	}
}

func TestExactIDWinsOverPrefix(t *testing.T) {
	x := New[string]()
	x.Add("ab", "short")
	x.Add("abc", "long")
	if v, err := x.Get("ab"); err != nil || v != "short" {
		t.Fatalf("got %q %v", v, err)
	}
}
