// Package testing is empty here. Upstream it holds a fake iptables.Interface that only
// Kubernetes' own unit tests import (pkg/proxy/iptables, pkg/proxy/ipvs); it exists so
// that `go mod tidy` in the wrapper modules, which follows the imports of those tests,
// resolves the import. Nothing minicri builds links it.
package testing
