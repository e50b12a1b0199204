package seccompbpf

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// ptrace is ptrace(2) whose result is only an error.
func ptrace(req, tid int, addr uintptr) error {
	_, err := ptraceRet(req, tid, addr, nil)
	return err
}

// ptraceRet is ptrace(2) with its result (a filter's length); data is
// the request's buffer, nil for none. The pointer is converted in the
// syscall's argument list, as unsafe.Pointer's rule 4 wants.
func ptraceRet(req, tid int, addr uintptr, data unsafe.Pointer) (int, error) {
	r, _, errno := unix.Syscall6(unix.SYS_PTRACE, uintptr(req), uintptr(tid), addr, uintptr(data), 0, 0) //nolint:gosec // G103: ptrace's data pointer
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}
