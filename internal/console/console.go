// Package console receives a container's PTY master from libcontainer,
// which sends it over a unix socket pair (Process.ConsoleSocket).
package console

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// SocketPair returns the two ends of a unix socket pair: the child end goes
// to libcontainer as the console socket, the parent end receives the master.
func SocketPair() (parent, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[1]), "console-parent"), os.NewFile(uintptr(fds[0]), "console-child"), nil
}

// RecvFile receives one descriptor sent with SCM_RIGHTS. With nonblock set
// it is made non-blocking, so that Go's poller serves it and closing it
// interrupts a pending read.
func RecvFile(sock *os.File, nonblock bool) (*os.File, error) {
	name := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), name, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("receive console: %w", err)
	}
	fd, err := FDFromControl(oob[:oobn])
	if err != nil {
		return nil, err
	}
	if nonblock {
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("receive console: %w", err)
		}
	}
	return os.NewFile(uintptr(fd), string(name[:n])), nil
}

// FDFromControl is the one descriptor an SCM_RIGHTS control message
// carries (received with MSG_CMSG_CLOEXEC: Go's net package sets it).
func FDFromControl(oob []byte) (int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil || len(msgs) != 1 {
		return -1, fmt.Errorf("receive console: bad control message: %v", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("receive console: bad unix rights: %v", err)
	}
	return fds[0], nil
}
