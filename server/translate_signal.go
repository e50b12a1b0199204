package server

import (
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The CRI's Signal enum numbers the real-time signals from SIGNAL_SIGRTMIN
// (signal 34) to SIGNAL_SIGRTMAX (signal 64) in order.
const (
	sigRTMin = 34
	sigRTMax = 64
)

// signalFromCRI names a CRI stop signal as the container config keeps it:
// "SIGTERM", or the number of a real-time one; "" for the runtime default.
func signalFromCRI(s runtimeapi.Signal) string {
	if s == runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT {
		return ""
	}
	if s >= runtimeapi.Signal_SIGNAL_SIGRTMIN && s <= runtimeapi.Signal_SIGNAL_SIGRTMAX {
		return strconv.Itoa(sigRTMin + int(s-runtimeapi.Signal_SIGNAL_SIGRTMIN))
	}
	return strings.TrimPrefix(s.String(), "SIGNAL_")
}

// signalToCRI is the CRI's enum value of a signal number.
func signalToCRI(sig syscall.Signal) runtimeapi.Signal {
	if sig >= sigRTMin && sig <= sigRTMax {
		return runtimeapi.Signal_SIGNAL_SIGRTMIN + runtimeapi.Signal(sig-sigRTMin)
	}
	if v, ok := runtimeapi.Signal_value["SIGNAL_"+unix.SignalName(sig)]; ok && unix.SignalName(sig) != "" {
		return runtimeapi.Signal(v)
	}
	return runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT
}
