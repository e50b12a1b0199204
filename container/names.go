package container

import (
	"fmt"
	"strconv"
	"sync"
)

// names reserves container names within a pod: a pod cannot hold two
// containers with the same name and attempt.
type names struct {
	mu    sync.Mutex
	owner map[string]string // key -> container ID
}

func newNames() *names { return &names{owner: map[string]string{}} }

// nameKey identifies a container name and attempt within a pod; the name
// is quoted, so that no two (name, attempt) pairs share a key.
func nameKey(podID string, cfg Config) string {
	return podID + "/" + strconv.Quote(cfg.Name) + "/" + strconv.FormatUint(uint64(cfg.Attempt), 10)
}

func (n *names) reserve(key, id string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if other, ok := n.owner[key]; ok {
		return fmt.Errorf("%w: name %s is used by container %s", ErrAlreadyExists, key, other)
	}
	n.owner[key] = id
	return nil
}

func (n *names) release(key, id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.owner[key] == id {
		delete(n.owner, key)
	}
}
