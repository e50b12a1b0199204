package ocirt

import "strings"

// bundleLabel is the libcontainer label that hooks receive as the OCI
// state's "bundle" (the last one wins, see libcontainer/utils.Annotations).
const bundleLabel = "bundle="

// withBundle makes bundle, the directory holding the container's
// config.json, the bundle libcontainer reports to hooks. specconv takes
// the monitor's working directory (the daemon's), and hooks such as
// NVIDIA's CDI hooks, run as root, read <bundle>/config.json to find the
// root they write into.
func withBundle(labels []string, bundle string) []string {
	out := make([]string, 0, len(labels)+1)
	for _, l := range labels {
		if !strings.HasPrefix(l, bundleLabel) {
			out = append(out, l)
		}
	}
	return append(out, bundleLabel+bundle)
}
