// Package idmap holds the ID mappings of a user namespace, shared by the
// sandbox (which asks for one), its monitor (which creates it) and its
// containers (which join it).
package idmap

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
