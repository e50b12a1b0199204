package sandbox

import "fmt"

// Handlers are the RuntimeClass handlers a pod may name.
type Handlers interface {
	// Check fails for a handler that does not exist, or that cannot run a
	// pod with its own user namespace when userNS is set.
	Check(name string, userNS bool) error
}

// checkHandler rejects a pod whose runtime handler is unknown (or unfit)
// before anything is created.
func (m *Manager) checkHandler(cfg Config) error {
	if m.opts.Handlers == nil {
		if cfg.RuntimeHandler != "" {
			return fmt.Errorf("%w: unknown runtime handler %q", ErrInvalid, cfg.RuntimeHandler)
		}
		return nil
	}
	if err := m.opts.Handlers.Check(cfg.RuntimeHandler, cfg.Namespaces.OwnUserNS()); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}
