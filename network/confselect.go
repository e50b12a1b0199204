package network

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
)

// confExtensions are the file name extensions read from ConfDir.
var confExtensions = []string{".conflist", ".conf", ".json"}

// loadFirstConfList returns the first network configuration in dir, by file
// name order, and the file it came from. A single-plugin config (a .conf or
// .json file without "plugins") is wrapped into a list. It returns
// (nil, "", nil) when dir holds no config file.
func loadFirstConfList(dir string) (*libcni.NetworkConfigList, string, error) {
	if dir == "" {
		return nil, "", nil
	}
	files, err := libcni.ConfFiles(dir, confExtensions)
	if err != nil {
		return nil, "", fmt.Errorf("list CNI configs in %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, "", nil
	}
	sort.Strings(files)
	file := files[0]
	list, err := loadConfListFile(file)
	if err != nil {
		return nil, file, err
	}
	return list, file, nil
}

// loadConfListFile loads one CNI config file as a list.
func loadConfListFile(file string) (*libcni.NetworkConfigList, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read CNI config: %w", err)
	}
	var probe struct {
		Plugins json.RawMessage `json:"plugins"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("parse CNI config %s: %w", file, err)
	}
	if probe.Plugins != nil || filepath.Ext(file) == ".conflist" {
		list, err := libcni.NetworkConfFromFile(file)
		if err != nil {
			return nil, fmt.Errorf("load CNI config list %s: %w", file, err)
		}
		return list, nil
	}
	conf, err := libcni.NetworkPluginConfFromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("load CNI config %s: %w", file, err)
	}
	// Single-network .conf files are deprecated in libcni but still loaded
	// by containerd and written by common CNI installers: keep them working.
	list, err := libcni.ConfListFromConf(conf) //nolint:staticcheck // see above
	if err != nil {
		return nil, fmt.Errorf("wrap CNI config %s into a list: %w", file, err)
	}
	return list, nil
}

// requiredPlugins lists the plugin binaries a list needs: each plugin's
// type and, if set, its IPAM type.
func requiredPlugins(list *libcni.NetworkConfigList) []string {
	var out []string
	seen := map[string]bool{}
	add := func(t string) {
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, p := range list.Plugins {
		if p == nil || p.Network == nil {
			continue
		}
		add(p.Network.Type)
		add(p.Network.IPAM.Type)
	}
	return out
}

// checkPlugins returns an error naming the first of plugins missing from
// binDirs.
func checkPlugins(network string, plugins, binDirs []string) error {
	for _, t := range plugins {
		if _, err := invoke.FindInPath(t, binDirs); err != nil {
			return fmt.Errorf("network %q: plugin %q not found in %v", network, t, binDirs)
		}
	}
	return nil
}
