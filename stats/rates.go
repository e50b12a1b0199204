package stats

import "sync"

// Rates remembers the last CPU sample of each cgroup to compute NanoCores.
type Rates struct {
	mu   sync.Mutex
	last map[string]Usage
}

// NewRates remembers nothing yet.
func NewRates() *Rates { return &Rates{last: map[string]Usage{}} }

// Rate sets u's NanoCores from the sample kept under key, then keeps u
// there.
func (r *Rates) Rate(key string, u *Usage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.last[key]; ok && u.Timestamp.After(prev.Timestamp) && u.CPUNanos >= prev.CPUNanos {
		u.NanoCores = uint64(float64(u.CPUNanos-prev.CPUNanos) / u.Timestamp.Sub(prev.Timestamp).Seconds())
	}
	r.last[key] = *u
}

// Forget drops the sample kept under key (its cgroup is gone).
func (r *Rates) Forget(key string) {
	r.mu.Lock()
	delete(r.last, key)
	r.mu.Unlock()
}

// Len is how many samples are kept.
func (r *Rates) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.last)
}
