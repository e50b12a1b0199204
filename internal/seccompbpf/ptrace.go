package seccompbpf

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// ptrace is ptrace(2) whose result is only an error.
func ptrace(req, tid int, addr, data uintptr) error {
	_, err := ptraceRet(req, tid, addr, data)
	return err
}

// ptraceRet is ptrace(2) with its result (a filter's length).
func ptraceRet(req, tid int, addr, data uintptr) (int, error) {
	r, _, errno := unix.Syscall6(unix.SYS_PTRACE, uintptr(req), uintptr(tid), addr, data, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

func bufAddr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

func metaAddr(m *[2]uint64) uintptr { return uintptr(unsafe.Pointer(m)) }
