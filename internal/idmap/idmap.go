// Package idmap holds the ID mappings of a user namespace, shared by the
// sandbox (which asks for one), its monitor (which creates it) and its
// containers (which join it).
package idmap

import (
	"errors"
	"fmt"
)

// Mapping maps Length IDs from ContainerID (inside) to HostID (outside).
type Mapping struct {
	ContainerID uint32 `json:"container_id"`
	HostID      uint32 `json:"host_id"`
	Length      uint32 `json:"length"`
}

// Mappings are the UID and GID mappings of a user namespace.
type Mappings struct {
	UIDs []Mapping `json:"uids"`
	GIDs []Mapping `json:"gids"`
}

// HostRoot is the host UID and GID of the namespace's root (container ID
// 0), as mapped by the first mappings.
func (m Mappings) HostRoot() (uid, gid int) {
	if len(m.UIDs) > 0 {
		uid = int(m.UIDs[0].HostID)
	}
	if len(m.GIDs) > 0 {
		gid = int(m.GIDs[0].HostID)
	}
	return uid, gid
}

// Mapped reports whether id (inside) is in one of the mappings.
func Mapped(ms []Mapping, id uint32) bool {
	for _, e := range ms {
		if id >= e.ContainerID && id-e.ContainerID < e.Length {
			return true
		}
	}
	return false
}

// maxID is the highest valid ID: (uid_t)-1 means "no ID" to the kernel.
const maxID = 1<<32 - 2

// Check refuses a mapping that is empty, that maps host ID 0 (the host's
// root) into the namespace, or whose ranges run past the highest valid ID.
func (m Mapping) Check() error {
	switch {
	case m.Length == 0:
		return errors.New("empty ID mapping")
	case m.HostID == 0:
		return errors.New("ID mapping includes host ID 0 (root)")
	case uint64(m.HostID)+uint64(m.Length)-1 > maxID:
		return fmt.Errorf("host IDs %d+%d run past %d", m.HostID, m.Length, uint64(maxID))
	case uint64(m.ContainerID)+uint64(m.Length)-1 > maxID:
		return fmt.Errorf("container IDs %d+%d run past %d", m.ContainerID, m.Length, uint64(maxID))
	}
	return nil
}

// Check checks every mapping and that no two overlap, inside or outside
// (the kernel refuses overlapping ranges when the maps are written, long
// after the request was accepted).
func Check(ms []Mapping) error {
	for i, m := range ms {
		if err := m.Check(); err != nil {
			return err
		}
		for _, o := range ms[:i] {
			if overlap(m.ContainerID, m.Length, o.ContainerID, o.Length) || overlap(m.HostID, m.Length, o.HostID, o.Length) {
				return fmt.Errorf("ID mappings %+v and %+v overlap", o, m)
			}
		}
	}
	return nil
}

func overlap(a, alen, b, blen uint32) bool {
	return uint64(a) < uint64(b)+uint64(blen) && uint64(b) < uint64(a)+uint64(alen)
}
