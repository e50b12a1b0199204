package container

import (
	"time"

	"github.com/minicri/minicri/internal/events"
)

// exitPollInterval is how often running containers are checked for an exit
// while someone listens to events (the kubelet's evented PLEG). Without
// listeners exits are noticed when a container is next read.
const exitPollInterval = 500 * time.Millisecond

// newContainer makes the in-memory container for rec, publishing its
// changes of state as events.
func (m *Manager) newContainer(rec Record) *Container {
	c := newContainer(rec, m.recordPath(rec.ID))
	c.changed = m.stateChanged
	return c
}

func (m *Manager) stateChanged(c *Container, to State) {
	kind, ok := map[State]events.Kind{StateCreated: events.Created, StateRunning: events.Started, StateExited: events.Stopped}[to]
	if ok {
		m.events.Publish(events.Event{Kind: kind, ID: c.ID(), PodID: c.rec.PodID})
	}
	if to == StateExited && m.opts.Hooks.Active() {
		m.hookExited(c)
	}
}

// watchExits notices exits the monitors record while events are watched.
func (m *Manager) watchExits() {
	t := time.NewTicker(exitPollInterval)
	defer t.Stop()
	for {
		select {
		case <-m.done:
			return
		case <-t.C:
		}
		if !m.events.Watched() && !m.opts.Hooks.Active() {
			continue
		}
		for _, c := range m.store.all("") {
			if st := c.Status().State; st == StateRunning || st == StateCreated {
				m.refresh(c)
			}
		}
	}
}

// Events subscribes to container lifecycle events.
func (m *Manager) Events() (<-chan events.Event, func()) { return m.events.Subscribe() }
