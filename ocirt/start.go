package ocirt

import "fmt"

// StartLoaded lets the init of a container created by another process (the
// monitor's short-lived helper that ran Create) exec the user's process:
// libcontainer's exec fifo, or the runtime binary's `start`.
func StartLoaded(h Handle) error {
	switch h := h.(type) {
	case lcHandle:
		return h.c.Exec()
	case binHandle:
		return h.b.run(h.b.command(h.cgPath, "start", h.id))
	}
	return fmt.Errorf("start: %w", ErrUnsupported)
}
