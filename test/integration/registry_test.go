package integration

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/minicri/minicri/test/registry/fixture"
)

// The offline registry is built and started once per test binary, on a
// free loopback port, and serves every fixture image.
var registry struct {
	once sync.Once
	url  string
	srv  *fixture.Server
	err  error
}

func registryURL(t *testing.T) string {
	t.Helper()
	registry.once.Do(func() {
		entries, err := fixture.BuildCatalog(fixture.CatalogOptions{Artifacts: true})
		if err != nil {
			registry.err = err
			return
		}
		srv, err := fixture.Start("127.0.0.1:0", fixture.Options{})
		if err != nil {
			registry.err = err
			return
		}
		registry.err = srv.Publish(entries)
		registry.url, registry.srv = srv.URL, srv
	})
	if registry.err != nil {
		t.Fatalf("test registry: %v", registry.err)
	}
	return registry.url
}

// withRegistry points the instance's registry mirrors at the test registry,
// so the fixture images resolve under their public names.
func withRegistry() option {
	return func(i *instance) { i.registry = true }
}

func (i *instance) writeHostsDir(t *testing.T) string {
	dir := filepath.Join(i.dir, "certs.d")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fixture.WriteHostsDir(dir, registryURL(t)); err != nil {
		t.Fatal(err)
	}
	return dir
}
