// Package fsm checks state machine transitions.
package fsm

// Transitions lists, for each state, the states it may move to. Staying in
// the same state is always allowed.
type Transitions[S comparable] map[S][]S

// Allows reports whether from may move to to.
func (t Transitions[S]) Allows(from, to S) bool {
	if from == to {
		return true
	}
	for _, next := range t[from] {
		if next == to {
			return true
		}
	}
	return false
}
