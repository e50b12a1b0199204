// Package monitor is minicri's per-pod monitor: a small process, re-executed
// from minicri's own binary and detached so that it outlives the daemon, that
// starts the pod's pause process (and, later, its containers), reaps them and
// answers requests on a unix socket in the pod's state directory.
//
// The protocol is one JSON request line and one JSON response line per
// connection.
package monitor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/minicri/minicri/internal/proc"
)

// Operations understood by the monitor.
const (
	OpStatus = "status" // report the pause process
	OpStop   = "stop"   // kill everything the monitor started, then exit
)

// Request is one call to the monitor.
type Request struct {
	Op string `json:"op"`
}

// Response is the monitor's answer.
type Response struct {
	Error string    `json:"error,omitempty"`
	Pause PauseInfo `json:"pause"`
}

// PauseInfo describes the pause process.
type PauseInfo struct {
	Ref      proc.Ref  `json:"ref"`
	Exited   bool      `json:"exited"`
	ExitCode int       `json:"exit_code"`
	ExitedAt time.Time `json:"exited_at,omitzero"`
}

// ErrUnavailable means no monitor answers on the socket.
var ErrUnavailable = errors.New("monitor unavailable")

// Call sends req to the monitor listening on sock and returns its response.
func Call(ctx context.Context, sock string, req Request) (Response, error) {
	var resp Response
	var conn net.Conn
	err := viaDirFD(sock, func(short string) (err error) {
		var d net.Dialer
		conn, err = d.DialContext(ctx, "unix", short)
		return err
	})
	if err != nil {
		return resp, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return resp, fmt.Errorf("monitor %s: send: %w", req.Op, err)
	}
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return resp, fmt.Errorf("monitor %s: read: %w", req.Op, err)
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		return resp, fmt.Errorf("monitor %s: parse: %w", req.Op, err)
	}
	if resp.Error != "" {
		return resp, fmt.Errorf("monitor %s: %s", req.Op, resp.Error)
	}
	return resp, nil
}
