package container

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The kernel's real-time signal range (glibc reserves the first two, but
// the numbers, as runc, CRI-O and the CRI's enum count them, start at 34).
const (
	sigRTMin = 34
	sigRTMax = 64
)

// signalAliases are the names Go's table lacks.
var signalAliases = map[string]syscall.Signal{"SIGCLD": unix.SIGCHLD, "SIGIOT": unix.SIGABRT, "SIGPOLL": unix.SIGIO}

// parseSignal reads "SIGTERM", "TERM", "sigterm", "15", and the real-time
// forms "SIGRTMIN+3", "RTMAX-2" (and the CRI's "SIGRTMINPLUS3").
func parseSignal(s string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	if sig, ok := signalAliases[name]; ok {
		return sig, nil
	}
	if sig, ok := parseRealtime(name); ok {
		return sig, nil
	}
	return 0, fmt.Errorf("%w: unknown signal %q", ErrInvalid, s)
}

// parseRealtime reads SIGRTMIN[+n] and SIGRTMAX[-n].
func parseRealtime(name string) (syscall.Signal, bool) {
	name = strings.NewReplacer("PLUS", "+", "MINUS", "-").Replace(name)
	for _, r := range []struct {
		prefix string
		base   int
		sign   int
	}{{"SIGRTMIN", sigRTMin, 1}, {"SIGRTMAX", sigRTMax, -1}} {
		rest, ok := strings.CutPrefix(name, r.prefix)
		if !ok {
			continue
		}
		off := 0
		if rest != "" {
			want := "+"
			if r.sign < 0 {
				want = "-"
			}
			digits, ok := strings.CutPrefix(rest, want)
			n, err := strconv.Atoi(digits)
			if !ok || err != nil || n < 0 || digits[0] == '+' || digits[0] == '-' {
				return 0, false
			}
			off = n
		}
		sig := r.base + r.sign*off
		if sig < sigRTMin || sig > sigRTMax {
			return 0, false
		}
		return syscall.Signal(sig), true
	}
	return 0, false
}

// StopSignal is the signal StopContainer sends first: the container's
// configured one, else its image's, else SIGTERM (an unparsable name is
// skipped, as stopping does).
func (i Info) StopSignal() syscall.Signal {
	sig, _ := effectiveStopSignal(i.Config.StopSignal, i.ImageStopSignal)
	return sig
}

// effectiveStopSignal picks the first parsable name; bad lists the
// unparsable ones it skipped.
func effectiveStopSignal(names ...string) (sig syscall.Signal, bad []string) {
	for _, name := range names {
		if name == "" {
			continue
		}
		if sig, err := parseSignal(name); err == nil {
			return sig, bad
		}
		bad = append(bad, name)
	}
	return syscall.SIGTERM, bad
}
