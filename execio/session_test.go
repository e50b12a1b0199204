package execio

import "testing"

func TestHasEnv(t *testing.T) {
	env := []string{"PATH=/bin", "TERMINAL=x"}
	if hasEnv(env, "TERM") || !hasEnv(env, "PATH") {
		t.Fatal("hasEnv matches whole keys only")
	}
}
