package container

import (
	"fmt"
	"time"
)

// FsUsage is the space and inodes the containers' writable layers use on
// their filesystem (the CRI's container_filesystems).
type FsUsage struct {
	Mountpoint            string
	UsedBytes, InodesUsed uint64
	Timestamp             time.Time
}

// FsInfo sums the writable layers under <root>/containers (each walked at
// most every stats.DiskTTL, as stats do) and names their filesystem.
func (m *Manager) FsInfo() (FsUsage, error) {
	now := time.Now()
	u := FsUsage{Timestamp: now}
	for _, c := range m.store.all("") {
		d := m.writableUsage(c.ID(), now)
		u.UsedBytes += d.Bytes
		u.InodesUsed += d.Inodes
	}
	mi, err := lookupMount(m.recordsDir())
	if err != nil {
		return FsUsage{}, fmt.Errorf("filesystem of %s: %w", m.recordsDir(), err)
	}
	u.Mountpoint = mi.Mountpoint
	return u, nil
}
