package image

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"
)

// hostAddress returns an address of this machine that is not loopback or
// link-local, so that a registry listening there is not "the node itself"
// to the realm policy.
func hostAddress(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Fatal("this test needs a non-loopback IPv4 address on some interface")
	return ""
}

// victim is a loopback listener that counts the connections it gets.
type victim struct {
	ln   net.Listener
	hits atomic.Int32
}

func newVictim(t *testing.T) *victim { return newVictimAt(t, "127.0.0.1:0") }

func newVictimAt(t *testing.T, addr string) *victim {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	v := &victim{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			v.hits.Add(1)
			_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"))
			c.Close()
		}
	}()
	return v
}

// The attack of issue 11 item 6: a registry the node pulls from answers
// with a bearer challenge (or a redirect) naming a server on the node's
// loopback. The node must not connect there.
func TestRegistryCannotSendTheNodeToLoopback(t *testing.T) {
	vic := newVictim(t)
	_, vport, _ := net.SplitHostPort(vic.ln.Addr().String())
	var realm, redirect atomic.Value
	evil := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			w.Header().Set("Location", redirect.Load().(string))
			w.WriteHeader(http.StatusFound)
			return
		}
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm=%q,service="evil"`, realm.Load().(string)))
		w.WriteHeader(http.StatusUnauthorized)
	}))
	ln, err := net.Listen("tcp", net.JoinHostPort(hostAddress(t), "0"))
	if err != nil {
		t.Fatal(err)
	}
	evil.Listener = ln
	evil.StartTLS()
	defer evil.Close()
	evilHost := ln.Addr().String()
	hosts := t.TempDir()
	writeHosts(t, hosts, "evil.example", fmt.Sprintf("server = \"https://%s\"\nskip_verify = true\n", evilHost))

	for _, tc := range []struct{ name, realm, redirect string }{
		{"http realm on loopback", "http://127.0.0.1:" + vport + "/token", ""},
		{"https realm on loopback", "https://127.0.0.1:" + vport + "/token", ""},
		{"realm on localhost", "https://localhost:" + vport + "/token", ""},
		{"realm on loopback, hex", "https://0x7f000001:" + vport + "/token", ""},
		{"realm on loopback, short form", "https://127.1:" + vport + "/token", ""},
		{"realm on loopback, decimal", "https://2130706433:" + vport + "/token", ""},
		{"realm on loopback, mapped IPv6", "https://[::ffff:127.0.0.1]:" + vport + "/token", ""},
		{"realm on metadata service", "http://169.254.169.254/latest/meta-data/", ""},
		{"token server redirects to loopback", "https://" + evilHost + "/token", "http://127.0.0.1:" + vport + "/stolen"},
		{"token server redirects to loopback over https", "https://" + evilHost + "/token", "https://127.0.0.1:" + vport + "/stolen"},
		{"token server forges a placeholder realm", "https://" + evilHost + "/token",
			"https://" + placeholderHost + realmPrefix + "http/127.0.0.1:" + vport + "/forged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			realm.Store(tc.realm)
			redirect.Store(tc.redirect)
			s := newStore(t, "", hosts)
			_, err := s.Pull(ctxT(t), "evil.example/x/y:1", nil)
			if err == nil {
				t.Fatal("pull succeeded")
			}
			t.Log(err)
			if n := vic.hits.Swap(0); n != 0 {
				t.Errorf("the registry made the node connect to its loopback (%d connections)", n)
			}
		})
	}
}

// Error bodies come back in pod events: what a registry writes there must
// not reach an error verbatim (terminal escapes, forged lines, megabytes).
func TestRegistryErrorBodyIsSanitized(t *testing.T) {
	body := "\x1b]0;pwned\x07\x1b[31mred\nE1201 forged kubelet log line\r\n\xff\xfe" + strings.Repeat("A", 60000)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(body))
	}))
	defer evil.Close()
	host := strings.TrimPrefix(evil.URL, "http://")
	s := newStore(t, "", "")
	_, err := s.Pull(ctxT(t), host+"/x/y:1", nil)
	if err == nil {
		t.Fatal("pull succeeded")
	}
	msg := err.Error()
	t.Log(msg)
	if len(msg) > 4*maxRemoteText+64 {
		t.Errorf("error of %d bytes", len(msg))
	}
	for _, r := range msg {
		if r == unicode.ReplacementChar || (!unicode.IsPrint(r) && r != ' ') {
			t.Fatalf("error carries %q", r)
		}
	}
}

// A name that resolves to a refused address passes the literal check; the
// dial itself is refused.
func TestDialCheckRefusesLoopback(t *testing.T) {
	vic := newVictim(t)
	ep, err := loadEndpoints("", "192.0.2.99")
	if err != nil {
		t.Fatal(err)
	}
	base, err := ep[0].httpTransport()
	if err != nil {
		t.Fatal(err)
	}
	rt := &rewriteTransport{registryHost: placeholderHost, ep: ep[0], base: base}
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet, "http://"+vic.ln.Addr().String()+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req, err = rt.withDialCheck(req)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := base.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
	}
	if !errors.Is(err, errRefusedAddress) {
		t.Errorf("dial to loopback for a public registry: %v", err)
	}
	if n := vic.hits.Load(); n != 0 {
		t.Errorf("loopback contacted %d times", n)
	}
	// The registry's own class is allowed: a loopback registry's realm
	// may be on loopback.
	ep, _ = loadEndpoints("", "127.0.0.1:1")
	rt = &rewriteTransport{registryHost: placeholderHost, ep: ep[0], base: base}
	req, _ = http.NewRequestWithContext(ctxT(t), http.MethodGet, "http://"+vic.ln.Addr().String()+"/", nil)
	if req, err = rt.withDialCheck(req); err != nil {
		t.Fatal(err)
	}
	resp, err = base.RoundTrip(req)
	if err != nil {
		t.Fatalf("dial to loopback for a loopback registry: %v", err)
	}
	resp.Body.Close()
}

// rebindingDNS is a DNS server for the resolver of the registry
// transports: name resolves to first until rebound is set, then to
// 127.0.0.1 (TTL 0), as an attacker's DNS server answers.
type rebindingDNS struct {
	first   netip.Addr
	rebound atomic.Bool
}

func (d *rebindingDNS) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		c, s := net.Pipe() // not a PacketConn: DNS over a stream, length-prefixed
		go d.serve(s)
		return c, nil
	}}
}

func (d *rebindingDNS) serve(c net.Conn) {
	defer c.Close()
	for {
		var l [2]byte
		if _, err := io.ReadFull(c, l[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(c, q); err != nil || len(q) < 12 {
			return
		}
		end := 12 // the question: labels, then type and class
		for end < len(q) && q[end] != 0 {
			end += int(q[end]) + 1
		}
		end += 5
		if end > len(q) {
			return
		}
		qtype := binary.BigEndian.Uint16(q[end-4:])
		resp := append([]byte{q[0], q[1], 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0}, q[12:end]...)
		if qtype == 1 { // A
			ip := d.first
			if d.rebound.Load() {
				ip = netip.MustParseAddr("127.0.0.1")
			}
			resp[7] = 1
			resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4)
			resp = append(resp, ip.AsSlice()...)
		}
		out := binary.BigEndian.AppendUint16(nil, uint16(len(resp)))
		if _, err := c.Write(append(out, resp...)); err != nil {
			return
		}
	}
}

// The attack of review-11 item 4: a registry at https://rebind.example
// names its own host on another port or scheme (a redirect, a realm), then
// rebinds the name to 127.0.0.1: the node must not connect to its loopback
// because the host name is the registry's. And the registry's own name,
// rebound, must not reach another class than it first did.
func TestRegistryCannotRebindItsOwnName(t *testing.T) {
	vic := newVictim(t)
	_, vport, _ := net.SplitHostPort(vic.ln.Addr().String())
	dns := &rebindingDNS{first: netip.MustParseAddr(hostAddress(t))}
	old := registryResolver
	registryResolver = dns.resolver()
	t.Cleanup(func() { registryResolver = old })

	var mode atomic.Value
	evil := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch mode.Load().(string) {
		case "realm":
			dns.rebound.Store(true)
			w.Header().Set("WWW-Authenticate", `Bearer realm="https://rebind.example:`+vport+`/token",service="evil"`)
			w.WriteHeader(http.StatusUnauthorized)
		case "redirect":
			if r.URL.Path == "/v2/" {
				return
			}
			dns.rebound.Store(true)
			http.Redirect(w, r, "http://rebind.example:"+vport+"/stolen", http.StatusFound)
		case "endpoint":
			// Close the connection, so that the next request dials the
			// name again, now bound to loopback.
			dns.rebound.Store(true)
			w.Header().Set("Connection", "close")
		}
	}))
	ln, err := net.Listen("tcp", net.JoinHostPort(dns.first.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	evil.Listener = ln
	evil.StartTLS()
	defer evil.Close()
	_, eport, _ := net.SplitHostPort(ln.Addr().String())
	// The endpoint's own port on loopback: where the rebound name leads.
	vicEP := newVictimAt(t, "127.0.0.1:"+eport)
	hosts := t.TempDir()
	writeHosts(t, hosts, "rebind.example", fmt.Sprintf("server = \"https://rebind.example:%s\"\nskip_verify = true\n", eport))

	for _, m := range []string{"realm", "redirect", "endpoint"} {
		t.Run(m, func(t *testing.T) {
			mode.Store(m)
			dns.rebound.Store(false)
			s := newStore(t, "", hosts)
			_, err := s.Pull(ctxT(t), "rebind.example/x/y:1", nil)
			if err == nil {
				t.Fatal("pull succeeded")
			}
			t.Log(err)
			if !dns.rebound.Load() {
				t.Fatal("the registry was never asked")
			}
			if n := vic.hits.Swap(0) + vicEP.hits.Swap(0); n != 0 {
				t.Errorf("the registry made the node connect to its loopback (%d connections)", n)
			}
		})
	}
}

// The endpoint itself is the same scheme, host and port.
func TestIsEndpoint(t *testing.T) {
	ep, err := loadEndpoints("", "evil.example")
	if err != nil {
		t.Fatal(err)
	}
	rt := &rewriteTransport{ep: ep[0]}
	for raw, want := range map[string]bool{
		"https://evil.example/v2/":     true,
		"https://EVIL.example:443/x":   true,
		"http://evil.example/x":        false,
		"http://evil.example:443/x":    false,
		"https://evil.example:6379/x":  false,
		"http://evil.example:6379/x":   false,
		"https://other.example/v2/":    false,
		"https://evil.example.evil/x/": false,
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := rt.isEndpoint(u); got != want {
			t.Errorf("isEndpoint(%s) = %v, want %v", raw, got, want)
		}
	}
}
