package events

import "testing"

func TestFanOutAndCancel(t *testing.T) {
	b := NewBroker()
	if b.Watched() {
		t.Fatal("no subscriber yet")
	}
	a, cancelA := b.Subscribe()
	c, cancelC := b.Subscribe()
	defer cancelC()
	b.Publish(Event{Kind: Started, ID: "x"})
	for _, ch := range []<-chan Event{a, c} {
		if e := <-ch; e.Kind != Started || e.ID != "x" || e.At.IsZero() {
			t.Fatalf("got %+v", e)
		}
	}
	cancelA()
	cancelA() // idempotent
	if _, ok := <-a; ok {
		t.Fatal("a cancelled subscription must be closed")
	}
}

func TestSlowSubscriberIsDroppedNotWaitedFor(t *testing.T) {
	b := NewBroker()
	ch, cancel := b.Subscribe()
	defer cancel()
	for range bufferSize + 10 {
		b.Publish(Event{Kind: Created})
	}
	n := 0
	for range ch {
		n++
	}
	if n != bufferSize || b.Watched() {
		t.Fatalf("got %d events, watched=%v; want the buffer then a close", n, b.Watched())
	}
}
