package image

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// Where a registry may send the node.
//
// A registry's answers name other servers: the token server (the realm of a
// "WWW-Authenticate: Bearer" challenge) and redirect targets (token servers,
// blob storage). Those names are chosen by whoever runs the registry, which
// may be anyone an image reference names; obeying them blindly turns the
// node into a proxy into its own network (SSRF): to 127.0.0.1, to the
// cloud metadata service, to services on the private network, and, over
// plain HTTP, with whatever the token request carries. The rule, as
// containerd and Docker apply it in spirit (go-containerregistry's own
// realm guard, which the placeholder host hides, is stricter still):
//
//   - A token realm is https. Plain http only when the endpoint itself is
//     plain http (an insecure or loopback registry or mirror the operator
//     configured, or localhost) and the realm is on the same host.
//   - Anything the registry names other than its own host may be on a
//     public address. It may be on a loopback or private address only if
//     the endpoint itself is in that same class (a loopback mirror's token
//     server on loopback, a private registry's on the private network).
//     Link-local (cloud metadata), unspecified, multicast and 0.0.0.0/8
//     addresses are refused always.
//   - This is checked on the literal address of the realm when the
//     challenge arrives, and on every address actually dialled for a
//     request to anything but the endpoint itself (names resolving to a
//     refused address, DNS rebinding, redirects). "The endpoint itself"
//     is the same scheme, host and port: the same host on another port
//     or scheme is another server. Requests that go through an HTTP proxy
//     dial the proxy: there only the literal check applies, and the
//     proxy's own policy decides.
//
// The endpoint's class is that of its literal address; for a name, that of
// the first address a connection to it reached (public until then, and
// when it is reached through a proxy). Later connections to the endpoint
// must reach the same class (a name rebound to loopback is refused, and
// cannot widen what the registry may name), never a forbidden one.

// errRefusedAddress is the cause of a request the policy refused.
var errRefusedAddress = errors.New("refused address")

// addrClass is the reachability class of an address.
type addrClass int32

const (
	classPublic addrClass = iota
	classPrivate
	classLoopback
	classForbidden
)

func (c addrClass) String() string {
	return [...]string{"public", "private", "loopback", "forbidden"}[c]
}

// classify returns the class of ip.
func classify(ip netip.Addr) addrClass {
	ip = ip.Unmap().WithZone("")
	switch {
	case !ip.IsValid():
		return classForbidden
	case ip.IsLoopback():
		return classLoopback
	case ip.IsUnspecified(), ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(),
		ip.IsInterfaceLocalMulticast(), ip.IsMulticast(), ip.Is4() && ip.As4()[0] == 0:
		return classForbidden
	case ip.IsPrivate(), cgnat.Contains(ip):
		return classPrivate
	default:
		return classPublic
	}
}

// cgnat is the shared address space of RFC 6598: not public either.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// hostClass returns the class of a URL host name: that of its literal
// address, loopback for localhost names, and ok=false for other names.
func hostClass(host string) (addrClass, bool) {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return classLoopback, true
	}
	h, _, _ = strings.Cut(h, "%")
	if ip, err := netip.ParseAddr(h); err == nil {
		return classify(ip), true
	}
	return classPublic, false
}

// endpointClass is the class of the endpoint this transport talks to.
func (t *rewriteTransport) endpointClass() addrClass {
	if c, ok := hostClass(t.ep.URL.Hostname()); ok {
		return c
	}
	if r := t.reached.Load(); r > 0 {
		return addrClass(r - 1)
	}
	return classPublic
}

// allowed reports whether the registry may send the node to an address of
// class c.
func (t *rewriteTransport) allowed(c addrClass) bool {
	return c == classPublic || (c != classForbidden && c == t.endpointClass())
}

// sameHost reports whether u names the endpoint's own host, on any port.
func (t *rewriteTransport) sameHost(u *url.URL) bool {
	return strings.EqualFold(u.Hostname(), t.ep.URL.Hostname())
}

// isEndpoint reports whether u names the endpoint itself: the same
// scheme, host and port.
func (t *rewriteTransport) isEndpoint(u *url.URL) bool {
	return strings.EqualFold(u.Scheme, t.ep.URL.Scheme) && t.sameHost(u) && urlPort(u) == urlPort(t.ep.URL)
}

// urlPort is u's port, or its scheme's default.
func urlPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// checkRealm applies the policy to a token realm.
func (t *rewriteTransport) checkRealm(u *url.URL) error {
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && t.ep.URL.Scheme == "http" && t.sameHost(u):
	case u.Scheme == "http":
		return fmt.Errorf("token realm %s refused: plain http to another host than the registry's", quoteRemote(u.Redacted()))
	default:
		return fmt.Errorf("token realm %s refused: not an http(s) URL", quoteRemote(u.Redacted()))
	}
	if u.Host == "" {
		return fmt.Errorf("token realm %s refused: no host", quoteRemote(u.Redacted()))
	}
	return t.checkHost(u)
}

// checkHost applies the address rule to u's literal host.
func (t *rewriteTransport) checkHost(u *url.URL) error {
	if t.isEndpoint(u) {
		return nil
	}
	if c, ok := hostClass(u.Hostname()); ok && !t.allowed(c) {
		return fmt.Errorf("%w: registry %s named %s, a %s address", errRefusedAddress,
			t.ep.URL.Host, quoteRemote(u.Hostname()), c)
	}
	return nil
}

// dialGuardKey marks a request whose dials the policy checks.
type dialGuardKey struct{}

// guard makes the dials of req (a request named by the registry) check
// the policy, unless req goes through a proxy.
func (t *rewriteTransport) guard(req *http.Request) (*http.Request, error) {
	if err := t.checkHost(req.URL); err != nil {
		return nil, err
	}
	if t.isEndpoint(req.URL) {
		return t.pinEndpoint(req), nil
	}
	return t.withDialCheck(req)
}

// withDialCheck makes the dials of req check the policy, unless req goes
// through a proxy.
func (t *rewriteTransport) withDialCheck(req *http.Request) (*http.Request, error) {
	if t.base.Proxy != nil {
		if p, err := t.base.Proxy(req); err != nil || p != nil {
			return req, err
		}
	}
	check := func(ip netip.Addr) error {
		if c := classify(ip); !t.allowed(c) {
			return fmt.Errorf("%w: registry %s sent the node to %s (%s), a %s address", errRefusedAddress,
				t.ep.URL.Host, quoteRemote(req.URL.Host), ip, c)
		}
		return nil
	}
	return req.WithContext(context.WithValue(req.Context(), dialGuardKey{}, check)), nil
}

// pinEndpoint makes the dials of a request to the endpoint, when the
// endpoint is a name reached without a proxy, keep to the class of the
// first address reached (see endpointClass).
func (t *rewriteTransport) pinEndpoint(req *http.Request) *http.Request {
	if _, literal := hostClass(t.ep.URL.Hostname()); literal {
		return req
	}
	if t.base.Proxy != nil {
		if p, _ := t.base.Proxy(req); p != nil {
			return req
		}
	}
	check := func(ip netip.Addr) error {
		c := classify(ip)
		if c != classForbidden && (t.reached.CompareAndSwap(0, int32(c)+1) || t.endpointClass() == c) {
			return nil
		}
		return fmt.Errorf("%w: registry %s resolved to %s, a %s address (first reached: %s)", errRefusedAddress,
			quoteRemote(t.ep.URL.Host), ip, c, t.endpointClass())
	}
	return req.WithContext(context.WithValue(req.Context(), dialGuardKey{}, check))
}

// guardedDialer returns a DialContext that applies the check a guarded
// request put in its context to every address it connects to.
func guardedDialer(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		check, ok := ctx.Value(dialGuardKey{}).(func(netip.Addr) error)
		if !ok {
			return d.DialContext(ctx, network, addr)
		}
		dd := *d
		dd.ControlContext = func(_ context.Context, _, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %v", errRefusedAddress, err)
			}
			return check(ap.Addr())
		}
		return dd.DialContext(ctx, network, addr)
	}
}

// maxRemoteText bounds text from a registry that ends up in an error.
const maxRemoteText = 512

// quoteRemote quotes text a registry chose, bounded.
func quoteRemote(s string) string {
	return "\"" + sanitizeRemote(s, 200) + "\""
}

// sanitizeRemote makes text that a registry may have chosen (error bodies,
// URLs) fit for an error message that reaches pod events and logs: control
// characters and invalid UTF-8 become '?', and it is cut to max bytes.
func sanitizeRemote(s string, max int) string {
	var b strings.Builder
	for i, r := range s {
		if b.Len() >= max {
			b.WriteString("…(truncated)")
			break
		}
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			b.WriteByte('?')
		case r == '\n' || r == '\t':
			b.WriteByte(' ')
		case !unicode.IsPrint(r) && r != ' ':
			b.WriteByte('?')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// remoteError is an error whose message is sanitized (see sanitizeRemote);
// errors.Is and As still see the original.
type remoteError struct {
	err error
	msg string
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.err }

func sanitizedError(err error, max int) error {
	if err == nil {
		return nil
	}
	return &remoteError{err: err, msg: sanitizeRemote(err.Error(), max)}
}
