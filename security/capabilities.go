package security

import (
	"fmt"
	"slices"
	"strings"

	"github.com/moby/sys/capability"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/internal/errdefs"
)

// DefaultCapabilities is containerd's default capability set
// (pkg/oci defaultUnixCaps), the same as Docker's.
func DefaultCapabilities() []string {
	return []string{
		"CAP_CHOWN",
		"CAP_DAC_OVERRIDE",
		"CAP_FSETID",
		"CAP_FOWNER",
		"CAP_MKNOD",
		"CAP_NET_RAW",
		"CAP_SETGID",
		"CAP_SETUID",
		"CAP_SETFCAP",
		"CAP_SETPCAP",
		"CAP_NET_BIND_SERVICE",
		"CAP_SYS_CHROOT",
		"CAP_KILL",
		"CAP_AUDIT_WRITE",
	}
}

// HostCapabilities returns the capabilities in the bounding set of the
// calling process, as "CAP_*" names. A privileged container gets exactly
// these: minicri cannot grant what it does not hold (e.g. CAP_SYS_RESOURCE
// when it runs without it).
func HostCapabilities() ([]string, error) {
	c, err := capability.NewPid2(0)
	if err != nil {
		return nil, fmt.Errorf("read capabilities: %w", err)
	}
	if err := c.Load(); err != nil {
		return nil, fmt.Errorf("read capabilities: %w", err)
	}
	supported, err := capability.ListSupported()
	if err != nil {
		return nil, fmt.Errorf("list capabilities: %w", err)
	}
	var out []string
	for _, cp := range supported {
		if c.Get(capability.BOUNDING, cp) {
			out = append(out, "CAP_"+strings.ToUpper(cp.String()))
		}
	}
	return out, nil
}

// normalizeCap turns "net_admin", "NET_ADMIN" or "cap_net_admin" into
// "CAP_NET_ADMIN".
func normalizeCap(name string) (string, error) {
	n := strings.ToUpper(strings.TrimSpace(name))
	if n == "" || n == "CAP_" {
		return "", fmt.Errorf("%w: empty capability name", errdefs.ErrInvalid)
	}
	if !strings.HasPrefix(n, "CAP_") {
		n = "CAP_" + n
	}
	return n, nil
}

func isAll(name string) bool {
	n := strings.ToUpper(strings.TrimSpace(name))
	return n == "ALL" || n == "CAP_ALL"
}

// CapRequest is what a container asks of its capabilities.
type CapRequest struct {
	Privileged                  bool
	CapAdd, CapDrop, AmbientAdd []string
}

// Capabilities mirrors containerd's WithCapabilities (CRI) and
// WithPrivileged: bounding, effective and permitted are always the same
// set; "ALL" in add means every capability minicri holds, "ALL" in drop
// empties the set first, then single adds and drops apply. Ambient
// capabilities are the requested ones that are also in the set; they are
// made inheritable too, since the kernel raises an ambient capability only
// when it is permitted and inheritable.
func Capabilities(req *CapRequest, hostCaps []string) (*specs.LinuxCapabilities, error) {
	var caps []string
	if req.Privileged {
		for _, c := range hostCaps {
			n, err := normalizeCap(c)
			if err != nil {
				return nil, err
			}
			caps = appendCap(caps, n)
		}
	} else {
		caps = DefaultCapabilities()
		if slices.ContainsFunc(req.CapAdd, isAll) {
			caps = nil
			for _, c := range hostCaps {
				n, err := normalizeCap(c)
				if err != nil {
					return nil, err
				}
				caps = appendCap(caps, n)
			}
		}
		if slices.ContainsFunc(req.CapDrop, isAll) {
			caps = nil
		}
		for _, c := range req.CapAdd {
			if isAll(c) {
				continue
			}
			n, err := normalizeCap(c)
			if err != nil {
				return nil, err
			}
			caps = appendCap(caps, n)
		}
		for _, c := range req.CapDrop {
			if isAll(c) {
				continue
			}
			n, err := normalizeCap(c)
			if err != nil {
				return nil, err
			}
			caps = slices.DeleteFunc(caps, func(x string) bool { return x == n })
		}
	}

	var ambient []string
	for _, c := range req.AmbientAdd {
		n, err := normalizeCap(c)
		if err != nil {
			return nil, err
		}
		if slices.Contains(caps, n) {
			ambient = appendCap(ambient, n)
		}
	}

	lc := &specs.LinuxCapabilities{
		Bounding:  slices.Clone(caps),
		Effective: slices.Clone(caps),
		Permitted: slices.Clone(caps),
	}
	if len(ambient) > 0 {
		lc.Inheritable = slices.Clone(ambient)
		lc.Ambient = ambient
	}
	return lc, nil
}

func appendCap(caps []string, c string) []string {
	if slices.Contains(caps, c) {
		return caps
	}
	return append(caps, c)
}
