package fsm

import "testing"

func TestAllows(t *testing.T) {
	tr := Transitions[string]{"a": {"b"}, "b": {"c"}}
	for _, c := range []struct {
		from, to string
		want     bool
	}{{"a", "b", true}, {"b", "c", true}, {"a", "a", true}, {"c", "c", true}, {"a", "c", false}, {"b", "a", false}, {"c", "a", false}} {
		if got := tr.Allows(c.from, c.to); got != c.want {
			t.Errorf("%s -> %s: %v, want %v", c.from, c.to, got, c.want)
		}
	}
}
