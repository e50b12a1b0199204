package network

import (
	"encoding/json"
	"fmt"

	"github.com/containernetworking/cni/libcni"
)

// defaultPlugins are the plugin binaries the built-in network needs.
var defaultPlugins = []string{"bridge", "host-local", "portmap"}

// defaultConfListBytes renders the built-in network: bridge (no per-pod
// ipMasq; minicri installs one static masquerade rule instead) with
// host-local IPAM, then portmap unless withPorts is false. There is no
// loopback plugin: minicri brings `lo` up itself.
func defaultConfListBytes(name, bridge, subnet, dataDir string, withPorts bool) ([]byte, error) {
	type obj = map[string]any
	list := obj{
		"cniVersion": "1.0.0",
		"name":       name,
		"plugins": []any{
			obj{
				"type":        "bridge",
				"bridge":      bridge,
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": obj{
					"type":    "host-local",
					"dataDir": dataDir,
					"ranges":  []any{[]any{obj{"subnet": subnet}}},
					"routes":  []any{obj{"dst": "0.0.0.0/0"}},
				},
			},
		},
	}
	if withPorts {
		list["plugins"] = append(list["plugins"].([]any), obj{
			"type":         "portmap",
			"capabilities": obj{"portMappings": true},
			"snat":         true,
		})
	}
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("marshal default network config: %w", err)
	}
	return append(b, '\n'), nil
}

// defaultConfList parses the rendered built-in network.
func defaultConfList(name, bridge, subnet, dataDir string, withPorts bool) (*libcni.NetworkConfigList, []byte, error) {
	b, err := defaultConfListBytes(name, bridge, subnet, dataDir, withPorts)
	if err != nil {
		return nil, nil, err
	}
	list, err := libcni.NetworkConfFromBytes(b)
	if err != nil {
		return nil, nil, fmt.Errorf("parse default network config: %w", err)
	}
	return list, b, nil
}
