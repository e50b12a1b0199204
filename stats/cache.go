package stats

import (
	"io/fs"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// SampleTTL is how long a container's sample is reused: scrapes closer
// together share one read of the cgroup and the processes.
const SampleTTL = time.Second

// DiskTTL bounds how often a writable layer is walked for its usage.
const DiskTTL = 10 * time.Second

// Cache keeps the last sample of each container and the last walk of its
// writable layer, by container ID.
type Cache struct {
	mu      sync.Mutex
	samples map[string]Sample
	disk    map[string]Disk
}

// Disk is the space and inodes a writable layer uses.
type Disk struct {
	at            time.Time
	Bytes, Inodes uint64
}

// NewCache is an empty cache.
func NewCache() *Cache {
	return &Cache{samples: map[string]Sample{}, disk: map[string]Disk{}}
}

// Forget drops what is kept of container id.
func (c *Cache) Forget(id string) {
	c.mu.Lock()
	delete(c.samples, id)
	delete(c.disk, id)
	c.mu.Unlock()
}

// Sample is container id's sample if it is less than SampleTTL older than
// now, else the one read reads, kept.
func (c *Cache) Sample(id string, now time.Time, read func() Sample) Sample {
	c.mu.Lock()
	s, ok := c.samples[id]
	c.mu.Unlock()
	if ok && now.Sub(s.Timestamp) < SampleTTL {
		return s
	}
	s = read()
	c.mu.Lock()
	c.samples[id] = s
	c.mu.Unlock()
	return s
}

// Writable is the usage of container id's writable layer dir, walked at
// most every DiskTTL, for both stats and metrics.
func (c *Cache) Writable(id, dir string, now time.Time) Disk {
	c.mu.Lock()
	d, ok := c.disk[id]
	c.mu.Unlock()
	if !ok || now.Sub(d.at) >= DiskTTL {
		d.at = now
		d.Bytes, d.Inodes = diskUsage(dir)
		c.mu.Lock()
		c.disk[id] = d
		c.mu.Unlock()
	}
	return d
}

// diskUsage counts the allocated bytes and inodes under dir.
func diskUsage(dir string) (bytes, inodes uint64) {
	// The walk never fails: an entry it cannot read is skipped.
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				bytes += uint64(st.Blocks) * 512 //nolint:gosec // st_blocks is never negative
			}
			inodes++
		}
		return nil
	})
	return bytes, inodes
}
