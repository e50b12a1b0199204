package container

import "testing"

func TestNameKeysDoNotCollide(t *testing.T) {
	pairs := [][2]Config{
		{{Name: "a/1", Attempt: 2}, {Name: "a", Attempt: 12}},
		{{Name: "a/1", Attempt: 2}, {Name: "a/1/2", Attempt: 0}},
		{{Name: `a"/"1`, Attempt: 2}, {Name: "a", Attempt: 1}},
	}
	for _, p := range pairs {
		if nameKey("pod", p[0]) == nameKey("pod", p[1]) {
			t.Errorf("%+v and %+v share the key %s", p[0], p[1], nameKey("pod", p[0]))
		}
	}
	n := newNames()
	if err := n.reserve(nameKey("pod", Config{Name: "a/1", Attempt: 2}), "c1"); err != nil {
		t.Fatal(err)
	}
	if err := n.reserve(nameKey("pod", Config{Name: "a", Attempt: 1}), "c2"); err != nil {
		t.Fatalf("a different name was refused: %v", err)
	}
	if err := n.reserve(nameKey("pod", Config{Name: "a/1", Attempt: 2}), "c3"); err == nil {
		t.Fatal("the same name and attempt was reserved twice")
	}
}
