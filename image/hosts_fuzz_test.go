package image

import (
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseHostsFile: any hosts.toml parses without a panic, and an
// accepted one yields the mirrors in file order then exactly one upstream
// server, each an http(s) URL with a host whose path is the registry API
// root ("/v2" appended unless override_path), with absolute certificate
// paths and only the pull/resolve/push capabilities.
func FuzzParseHostsFile(f *testing.F) {
	seeds := []string{
		``,
		`server = "https://registry-1.docker.io"`,
		`server = "https://registry.example.com"
[host."https://mirror.example.com"]
  capabilities = ["pull", "resolve"]
  ca = "ca.crt"
  skip_verify = false
  [host."https://mirror.example.com".header]
    x-custom = ["a", "b"]
    authorization = "Basic Zm9vOmJhcg=="
`,
		`[host."http://10.0.0.1:5000"]
  capabilities = ["pull"]
  skip_verify = true
[host."https://mirror2:8443/prefix"]
  override_path = true
  client = [["client.crt", "client.key"], "other.pem"]
  ca = ["/etc/ssl/a.pem", "b.pem"]
`,
		`server = "localhost:5000"
capabilities = ["push"]
client = "/abs/client.pem"
`,
		`[host."ftp://x"]`,
		`[host."https://m"]
capabilities = ["delete"]`,
		`server = "https://"`,
		`[host."https://m"]
client = [["only-one"]]`,
		`header = 1`,
	}
	for _, s := range seeds {
		f.Add("registry.example.com", s)
	}
	f.Add("docker.io", seeds[1])
	f.Add("localhost:5000", seeds[4])
	f.Fuzz(func(t *testing.T, host, data string) {
		const dir = "/etc/minicri/certs.d/h"
		eps, err := parseHostsFile(dir, host, []byte(data))
		if err != nil {
			return
		}
		if len(eps) == 0 {
			t.Fatal("no endpoints, not even the server")
		}
		for i, ep := range eps {
			if wantMirror := i < len(eps)-1; ep.Mirror != wantMirror {
				t.Fatalf("endpoint %d (%s): mirror=%v, want %v", i, ep, ep.Mirror, wantMirror)
			}
			if ep.URL == nil || (ep.URL.Scheme != "http" && ep.URL.Scheme != "https") || ep.URL.Host == "" {
				t.Fatalf("endpoint %d: bad URL %v", i, ep.URL)
			}
			if !ep.OverridePath && !strings.HasSuffix(ep.URL.Path, "/v2") {
				t.Fatalf("endpoint %d: API root %q does not end in /v2", i, ep.URL.Path)
			}
			if ep.Caps&^(capPull|capResolve|capPush) != 0 {
				t.Fatalf("endpoint %d: unknown capability bits %b", i, ep.Caps)
			}
			for _, ca := range ep.CAs {
				if !filepath.IsAbs(ca) {
					t.Fatalf("endpoint %d: CA path %q is not absolute", i, ca)
				}
			}
			for _, cc := range ep.ClientCerts {
				if !filepath.IsAbs(cc[0]) || (cc[1] != "" && !filepath.IsAbs(cc[1])) {
					t.Fatalf("endpoint %d: client certificate paths %q are not absolute", i, cc)
				}
			}
			if ep.Header == nil {
				t.Fatalf("endpoint %d: nil header", i)
			}
		}
	})
}
