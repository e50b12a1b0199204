package container

import (
	"errors"
	"testing"
)

// TestCheckNamespaces: a container's namespace options must match what its
// pod has; what minicri would not do is refused, not ignored.
func TestCheckNamespaces(t *testing.T) {
	maps := []IDMapping{{ContainerID: 0, HostID: 1_200_000, Length: 65536}}
	otherMaps := []IDMapping{{ContainerID: 0, HostID: 1_300_000, Length: 65536}}
	plain := PodInfo{ID: "p", NetNSPath: "/run/netns/p"}
	host := PodInfo{ID: "p", HostIPC: true, HostPID: true}
	userns := PodInfo{ID: "p", NetNSPath: "/run/netns/p", UserNS: &IDMappings{UIDs: maps, GIDs: maps}}
	ok := map[string]struct {
		pod PodInfo
		sec Security
	}{
		"defaults":                   {plain, Security{}},
		"host net, IPC, PID in host": {host, Security{Network: ModeNode, IPC: ModeNode, PID: ModeNode}},
		"pod modes in host pod":      {host, Security{}},
		"own PID namespace":          {plain, Security{PID: ModeContainer}},
		"userns NODE in plain pod":   {plain, Security{UserNS: &UserNSOption{Mode: ModeNode}}},
		"userns POD, pod's mappings": {userns, Security{UserNS: &UserNSOption{Mode: ModePod, UIDs: maps, GIDs: maps}}},
		"userns POD, no mappings":    {userns, Security{UserNS: &UserNSOption{Mode: ModePod}}},
		"no userns option in userns": {userns, Security{}},
	}
	for name, c := range ok {
		if err := checkNamespaces(c.pod, &c.sec); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := map[string]struct {
		pod PodInfo
		sec Security
	}{
		"host net in plain pod":        {plain, Security{Network: ModeNode}},
		"host IPC in plain pod":        {plain, Security{IPC: ModeNode}},
		"host PID in plain pod":        {plain, Security{PID: ModeNode}},
		"own network namespace":        {plain, Security{Network: ModeContainer}},
		"target network namespace":     {plain, Security{Network: ModeTarget}},
		"own IPC namespace":            {host, Security{IPC: ModeContainer}},
		"unknown PID mode":             {plain, Security{PID: 7}},
		"userns NODE in userns pod":    {userns, Security{UserNS: &UserNSOption{Mode: ModeNode}}},
		"userns POD in plain pod":      {plain, Security{UserNS: &UserNSOption{Mode: ModePod, UIDs: maps, GIDs: maps}}},
		"userns POD, other UIDs":       {userns, Security{UserNS: &UserNSOption{Mode: ModePod, UIDs: otherMaps, GIDs: maps}}},
		"userns POD, other GIDs":       {userns, Security{UserNS: &UserNSOption{Mode: ModePod, UIDs: maps, GIDs: otherMaps}}},
		"userns CONTAINER":             {userns, Security{UserNS: &UserNSOption{Mode: ModeContainer}}},
		"userns TARGET":                {plain, Security{UserNS: &UserNSOption{Mode: ModeTarget}}},
		"host net in userns pod (own)": {userns, Security{Network: ModeNode}},
	}
	for name, c := range bad {
		if err := checkNamespaces(c.pod, &c.sec); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}
