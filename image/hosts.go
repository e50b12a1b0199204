package image

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	dref "github.com/distribution/reference"
)

// DefaultRegistryConfigPath is where hosts.toml files are looked up when the
// Config names no directory.
const DefaultRegistryConfigPath = "/etc/minicri/certs.d"

type capability uint8

const (
	capPull capability = 1 << iota
	capResolve
	capPush
)

// endpoint is one host to talk to for a registry: a mirror from hosts.toml or
// the upstream server, in the order they are tried.
type endpoint struct {
	URL          *url.URL // scheme://host/api-root (the path replaces "/v2")
	Caps         capability
	SkipVerify   bool
	CAs          []string // CA certificate files
	ClientCerts  [][2]string
	Header       http.Header
	OverridePath bool
	Mirror       bool // false for the registry's own server
}

func (e endpoint) String() string { return e.URL.String() }

// hostsFileHost is a [host."..."] table, and the top-level table of a
// hosts.toml for the server.
type hostsFileHost struct {
	Capabilities []string       `toml:"capabilities"`
	CA           any            `toml:"ca"`
	Client       any            `toml:"client"`
	SkipVerify   *bool          `toml:"skip_verify"`
	Header       map[string]any `toml:"header"`
	OverridePath bool           `toml:"override_path"`
}

type hostsFile struct {
	Server       string                   `toml:"server"`
	Capabilities []string                 `toml:"capabilities"`
	CA           any                      `toml:"ca"`
	Client       any                      `toml:"client"`
	SkipVerify   *bool                    `toml:"skip_verify"`
	Header       map[string]any           `toml:"header"`
	OverridePath bool                     `toml:"override_path"`
	Host         map[string]hostsFileHost `toml:"host"`
}

// isLocalhost reports whether host (with optional port) is a loopback name,
// reached over plain HTTP without configuration.
func isLocalhost(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// defaultServer is the upstream URL of a registry host without hosts.toml.
func defaultServer(host string) string {
	switch {
	case host == dockerHub:
		return "https://registry-1.docker.io"
	case isLocalhost(host):
		return "http://" + host
	default:
		return "https://" + host
	}
}

// hostRE is the reference grammar's host[:port] (a DNS name, an IPv4 or a
// bracketed IPv6 address, optional port), anchored.
var hostRE = regexp.MustCompile(`^(?:` + dref.DomainRegexp.String() + `)$`)

// checkHost refuses a registry host outside the reference grammar. The host
// names a directory under the config directory and goes into the registry
// URL: "..", "a/b" or "" would reach <certs.d>/../hosts.toml or another URL
// path. parseReference only returns grammar hosts; this keeps any other
// caller from reaching outside certs.d (defence in depth).
func checkHost(host string) error {
	if !hostRE.MatchString(host) {
		return fmt.Errorf("%w: registry host %q", ErrInvalidReference, host)
	}
	return nil
}

// hostDirs are the candidate config directories for host, as containerd
// looks them up: "<host>", then "<host>_<port>_" for hosts with a port.
// host has passed checkHost; a name that is not a single local path
// element is skipped all the same.
func hostDirs(root, host string) []string {
	names := []string{host}
	if i := strings.LastIndex(host, ":"); i > 0 {
		names = append(names, host[:i]+"_"+host[i+1:]+"_")
	}
	var dirs []string
	for _, n := range names {
		if filepath.IsLocal(n) && !strings.ContainsRune(n, filepath.Separator) {
			dirs = append(dirs, filepath.Join(root, n))
		}
	}
	return dirs
}

// loadEndpoints returns the endpoints for a registry host: the hosts of
// <configDir>/<host>/hosts.toml (or of _default/hosts.toml) in file order,
// then the server. No file means the upstream alone.
func loadEndpoints(configDir, host string) ([]endpoint, error) {
	if err := checkHost(host); err != nil {
		return nil, err
	}
	if configDir != "" {
		for _, dir := range append(hostDirs(configDir, host), filepath.Join(configDir, "_default")) {
			file := filepath.Join(dir, "hosts.toml")
			data, err := os.ReadFile(file)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			eps, err := parseHostsFile(dir, host, data)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			return eps, nil
		}
	}
	u, err := apiURL(defaultServer(host), false)
	if err != nil {
		return nil, err
	}
	return []endpoint{{URL: u, Caps: capPull | capResolve | capPush}}, nil
}

func parseHostsFile(dir, host string, data []byte) ([]endpoint, error) {
	var hf hostsFile
	md, err := toml.Decode(string(data), &hf)
	if err != nil {
		return nil, err
	}
	// Host tables in the order the file gives them: mirrors are tried in order.
	var order []string
	seen := map[string]bool{}
	for _, k := range md.Keys() {
		if len(k) >= 2 && k[0] == "host" && !seen[k[1]] {
			seen[k[1]] = true
			order = append(order, k[1])
		}
	}
	var eps []endpoint
	for _, h := range order {
		ep, err := makeEndpoint(dir, h, hf.Host[h])
		if err != nil {
			return nil, fmt.Errorf("host %q: %w", h, err)
		}
		ep.Mirror = true
		eps = append(eps, ep)
	}
	server := hf.Server
	if server == "" {
		server = defaultServer(host)
	}
	sep, err := makeEndpoint(dir, server, hostsFileHost{
		Capabilities: hf.Capabilities, CA: hf.CA, Client: hf.Client,
		SkipVerify: hf.SkipVerify, Header: hf.Header, OverridePath: hf.OverridePath,
	})
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", server, err)
	}
	return append(eps, sep), nil
}

func makeEndpoint(dir, rawURL string, h hostsFileHost) (endpoint, error) {
	u, err := apiURL(rawURL, h.OverridePath)
	if err != nil {
		return endpoint{}, err
	}
	ep := endpoint{URL: u, OverridePath: h.OverridePath, Header: http.Header{}}
	if h.Capabilities == nil {
		ep.Caps = capPull | capResolve | capPush
	}
	for _, c := range h.Capabilities {
		switch c {
		case "pull":
			ep.Caps |= capPull
		case "resolve":
			ep.Caps |= capResolve
		case "push":
			ep.Caps |= capPush
		default:
			return endpoint{}, fmt.Errorf("unknown capability %q", c)
		}
	}
	if h.SkipVerify != nil {
		ep.SkipVerify = *h.SkipVerify
	}
	cas, err := stringList(h.CA)
	if err != nil {
		return endpoint{}, fmt.Errorf("ca: %w", err)
	}
	for _, ca := range cas {
		ep.CAs = append(ep.CAs, relTo(dir, ca))
	}
	switch c := h.Client.(type) {
	case nil:
	case string:
		ep.ClientCerts = append(ep.ClientCerts, [2]string{relTo(dir, c), ""})
	case []any:
		for _, item := range c {
			switch p := item.(type) {
			case string:
				ep.ClientCerts = append(ep.ClientCerts, [2]string{relTo(dir, p), ""})
			case []any:
				if len(p) != 2 {
					return endpoint{}, fmt.Errorf("client: want [cert, key] pairs")
				}
				cert, ok1 := p[0].(string)
				key, ok2 := p[1].(string)
				if !ok1 || !ok2 {
					return endpoint{}, fmt.Errorf("client: want strings")
				}
				ep.ClientCerts = append(ep.ClientCerts, [2]string{relTo(dir, cert), relTo(dir, key)})
			default:
				return endpoint{}, fmt.Errorf("client: unexpected %T", item)
			}
		}
	default:
		return endpoint{}, fmt.Errorf("client: unexpected %T", h.Client)
	}
	for k, v := range h.Header {
		vals, err := stringList(v)
		if err != nil {
			return endpoint{}, fmt.Errorf("header %q: %w", k, err)
		}
		for _, s := range vals {
			ep.Header.Add(k, s)
		}
	}
	return ep, nil
}

// apiURL turns a host URL from hosts.toml into the registry API root: the
// path gets "/v2" appended unless override_path is set, as in containerd.
func apiURL(raw string, overridePath bool) (*url.URL, error) {
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("unsupported scheme %q", u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("no host in %q", raw)
	}
	p := strings.TrimSuffix(u.Path, "/")
	if !overridePath {
		if p == "" {
			p = "/v2"
		} else if !strings.HasSuffix(p, "/v2") {
			p = path.Clean(p) + "/v2"
		}
	}
	u.Path = p
	u.RawPath = ""
	return u, nil
}

func relTo(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

func stringList(v any) ([]string, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []string{t}, nil
	case []any:
		out := make([]string, 0, len(t))
		for _, x := range t {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("want strings, got %T", x)
			}
			out = append(out, s)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("want a string or a list of strings, got %T", v)
	}
}

// registryResolver resolves registry names; nil is net's default. Tests
// replace it (DNS rebinding).
var registryResolver *net.Resolver

// httpTransport builds the HTTP transport for one endpoint.
func (e endpoint) httpTransport() (*http.Transport, error) {
	t := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: guardedDialer(&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
			Resolver:  registryResolver,
		}),
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          32,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: 1 * time.Second,
	}
	if e.URL.Scheme != "https" {
		return t, nil
	}
	tc := &tls.Config{InsecureSkipVerify: e.SkipVerify, MinVersion: tls.VersionTLS12} //nolint:gosec // skip_verify is the operator's choice
	if len(e.CAs) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		for _, ca := range e.CAs {
			pem, err := os.ReadFile(ca)
			if err != nil {
				return nil, fmt.Errorf("ca: %w", err)
			}
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("ca %s: no certificates", ca)
			}
		}
		tc.RootCAs = pool
	}
	for _, cc := range e.ClientCerts {
		certFile, keyFile := cc[0], cc[1]
		if keyFile == "" {
			keyFile = strings.TrimSuffix(certFile, filepath.Ext(certFile)) + ".key"
		}
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		tc.Certificates = append(tc.Certificates, cert)
	}
	t.TLSClientConfig = tc
	return t, nil
}
