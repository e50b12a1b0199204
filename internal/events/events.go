// Package events carries lifecycle events of sandboxes and containers to
// the CRI's GetContainerEvents subscribers (the kubelet's evented PLEG).
package events

import (
	"sync"
	"time"
)

// Kind is what happened.
type Kind int

// The CRI's ContainerEventType values.
const (
	Created Kind = iota
	Started
	Stopped
	Deleted
)

// Event is one lifecycle change of a container or a pod sandbox.
type Event struct {
	Kind  Kind
	ID    string // the container's ID, or the sandbox's for sandbox events
	PodID string
	At    time.Time
	// Final is the object's last view for a Deleted event, whose store has
	// dropped it by the time a subscriber reads (a sandbox.Info for a
	// sandbox: the kubelet needs the pod's status to forget it).
	Final any
}

// bufferSize is how many events a subscriber may lag behind before it is
// dropped (it reconnects and relists): publishers never block.
const bufferSize = 1024

// Broker fans events out to subscribers.
type Broker struct {
	mu   sync.Mutex
	subs map[chan Event]struct{}
}

// NewBroker returns a broker with no subscribers.
func NewBroker() *Broker { return &Broker{subs: map[chan Event]struct{}{}} }

// Subscribe returns a channel of events from now on and a cancel function.
// The channel is closed by cancel, or when the subscriber fell too far
// behind.
func (b *Broker) Subscribe() (<-chan Event, func()) {
	ch := make(chan Event, bufferSize)
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() { b.drop(ch) }
}

func (b *Broker) drop(ch chan Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[ch]; ok {
		delete(b.subs, ch)
		close(ch)
	}
}

// Publish sends e to every subscriber without blocking.
func (b *Broker) Publish(e Event) {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- e:
		default:
			delete(b.subs, ch)
			close(ch)
		}
	}
}

// Watched reports whether anyone subscribes, so that producers can skip
// work nobody waits for.
func (b *Broker) Watched() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs) > 0
}
