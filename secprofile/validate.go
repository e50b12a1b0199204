package secprofile

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"

	libseccomp "github.com/opencontainers/runc/libcontainer/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Bounds of a pulled profile (security-profiles-operator's default is 128
// entries; moby's default profile has about 60 and 450 names).
const (
	maxEntries = 1024 // syscall entries
	maxNames   = 4096 // names over all entries
	maxNameLen = 64
	maxArgs    = 6 // conditions per entry; a system call has 6 arguments
)

// Parse reads and validates a profile: OCI runtime-spec seccomp JSON
// (specs.LinuxSeccomp), one value, no unknown field; a default action; no
// listener (listenerPath, listenerMetadata) and no SCMP_ACT_NOTIFY: no
// agent of the registry's choosing decides a container's calls; actions,
// architectures, operators and flags runc's seccomp tables know; errno
// values only with ERRNO or TRACE; names of [a-z0-9_], argument indexes
// below 6; at most maxEntries entries and maxNames names.
func Parse(data []byte) (*specs.LinuxSeccomp, error) {
	if len(data) > MaxProfile {
		return nil, invalidf("a profile of %d bytes, at most %d", len(data), MaxProfile)
	}
	var p specs.LinuxSeccomp
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, invalidf("not an OCI seccomp profile (JSON): %.200v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, invalidf("not an OCI seccomp profile: data after its JSON value")
	}
	if err := check(&p); err != nil {
		return nil, err
	}
	return &p, nil
}

func check(p *specs.LinuxSeccomp) error {
	if p.ListenerPath != "" || p.ListenerMetadata != "" {
		return invalidf("listenerPath and listenerMetadata are refused")
	}
	if p.DefaultAction == "" {
		return invalidf("no defaultAction")
	}
	if err := checkAction(p.DefaultAction, p.DefaultErrnoRet); err != nil {
		return err
	}
	for _, a := range p.Architectures {
		if _, err := libseccomp.ConvertStringToArch(string(a)); err != nil {
			return invalidf("architecture %.40q is unknown", a)
		}
	}
	for _, f := range p.Flags {
		if !slices.Contains(libseccomp.KnownFlags(), string(f)) {
			return invalidf("flag %.40q is unknown", f)
		}
	}
	if len(p.Syscalls) > maxEntries {
		return invalidf("%d syscall entries, at most %d", len(p.Syscalls), maxEntries)
	}
	names := 0
	for i := range p.Syscalls {
		names += len(p.Syscalls[i].Names)
		if names > maxNames {
			return invalidf("more than %d syscall names", maxNames)
		}
		if err := checkSyscall(&p.Syscalls[i]); err != nil {
			return err
		}
	}
	return nil
}

func checkAction(a specs.LinuxSeccompAction, ret *uint) error {
	if a == specs.ActNotify {
		return invalidf("SCMP_ACT_NOTIFY is refused")
	}
	if _, err := libseccomp.ConvertStringToAction(string(a)); err != nil {
		return invalidf("action %.40q is unknown", a)
	}
	if ret != nil && a != specs.ActErrno && a != specs.ActTrace {
		return invalidf("an errnoRet with action %s (only ERRNO and TRACE take one)", a)
	}
	return nil
}

func checkSyscall(s *specs.LinuxSyscall) error {
	if len(s.Names) == 0 {
		return invalidf("a syscall entry names no system call")
	}
	for _, n := range s.Names {
		if !validName(n) {
			return invalidf("system call name %.70q is not [a-z0-9_]{1,%d}", n, maxNameLen)
		}
	}
	if err := checkAction(s.Action, s.ErrnoRet); err != nil {
		return err
	}
	if len(s.Args) > maxArgs {
		return invalidf("%d conditions on %s, at most %d", len(s.Args), s.Names[0], maxArgs)
	}
	for _, a := range s.Args {
		if a.Index >= maxArgs {
			return invalidf("argument index %d of %s (system calls have 6)", a.Index, s.Names[0])
		}
		if _, err := libseccomp.ConvertStringToOperator(string(a.Op)); err != nil {
			return invalidf("operator %.40q is unknown", a.Op)
		}
	}
	return nil
}

func validName(n string) bool {
	if n == "" || len(n) > maxNameLen {
		return false
	}
	for _, c := range n {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}
