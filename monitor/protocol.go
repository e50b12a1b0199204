// Package monitor is minicri's per-pod monitor: a small process, re-executed
// from minicri's own binary and detached so that it outlives the daemon, that
// starts the pod's pause process (and, later, its containers), reaps them and
// answers requests on a unix socket in the pod's state directory.
//
// The protocol is one JSON request line and one JSON response line per
// connection, except for OpAttach: after a successful response the
// connection carries the container's stdio in frames (see attach.go).
package monitor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"github.com/minicri/minicri/internal/proc"
)

// Operations understood by the monitor.
const (
	OpStatus = "status" // report the pause process
	OpStop   = "stop"   // kill everything the monitor started, then exit

	OpCreate    = "create"     // create a container (its init waits for OpStart)
	OpStart     = "start"      // start a created container
	OpKill      = "kill"       // stop a container: Signal, then SIGKILL after Timeout
	OpDelete    = "delete"     // kill if needed and destroy a container
	OpReopenLog = "reopen-log" // reopen a container's log file
	OpInspect   = "inspect"    // report a container
	OpAttach    = "attach"     // stream a container's stdio on this connection
	OpResize    = "resize"     // set the terminal size of a TTY container
	OpRestore   = "restore"    // create a container by restoring CRIU images (restore.go)
)

// Request is one call to the monitor.
type Request struct {
	Op      string         `json:"op"`
	ID      string         `json:"id,omitempty"` // container ID
	Create  *CreateRequest `json:"create,omitempty"`
	Signal  int            `json:"signal,omitempty"`
	Timeout time.Duration  `json:"timeout,omitempty"`
	Attach  *AttachRequest `json:"attach,omitempty"`
	Width   uint16         `json:"width,omitempty"`  // OpResize: columns
	Height  uint16         `json:"height,omitempty"` // OpResize: rows
}

// AttachRequest names the streams an attach wants.
type AttachRequest struct {
	Stdin  bool `json:"stdin,omitempty"`
	Stdout bool `json:"stdout,omitempty"`
	Stderr bool `json:"stderr,omitempty"`
}

// CreateRequest describes a container to create.
type CreateRequest struct {
	Bundle    string `json:"bundle"`             // directory holding config.json, the OCI spec
	Dir       string `json:"dir"`                // where the monitor writes exit.json
	RuncRoot  string `json:"runc_root"`          // libcontainer's state root
	LogDir    string `json:"log_dir,omitempty"`  // the pod's log directory
	LogPath   string `json:"log_path,omitempty"` // the log, relative to LogDir (opened beneath it)
	Stdin     bool   `json:"stdin,omitempty"`
	StdinOnce bool   `json:"stdin_once,omitempty"`
	TTY       bool   `json:"tty,omitempty"`
	// Runtime, when set, is the OCI runtime binary that runs the container
	// (its RuntimeClass handler's); nil: the built-in libcontainer.
	Runtime *RuntimeBinary `json:"runtime,omitempty"`
	// Checkpoint (OpRestore) is the directory of the CRIU images to restore.
	Checkpoint string `json:"checkpoint,omitempty"`
}

// RuntimeBinary is an external OCI runtime.
type RuntimeBinary struct {
	Path string `json:"path"`
	Root string `json:"root"`
}

// Response is the monitor's answer.
type Response struct {
	Error     string         `json:"error,omitempty"`
	Pause     PauseInfo      `json:"pause"`
	Container *ContainerInfo `json:"container,omitempty"`
}

// ContainerInfo is what the monitor knows of a container.
type ContainerInfo struct {
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"started_at,omitzero"`
	Exit      *Exit     `json:"exit,omitempty"`
	// Runtime is the OCI runtime binary that runs the container ("": the
	// built-in one). A monitor older than runtime handlers never sets it.
	Runtime string `json:"runtime,omitempty"`
}

// Exit records how a container's init ended. The monitor writes it to
// exit.json in the container's directory before reporting it.
type Exit struct {
	Code       int       `json:"code"`
	FinishedAt time.Time `json:"finished_at"`
	OOMKilled  bool      `json:"oom_killed,omitempty"`
}

// ExitPath is where the exit record of the container with directory dir lives.
func ExitPath(dir string) string { return filepath.Join(dir, "exit.json") }

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
		if err := conn.SetDeadline(dl); err != nil {
			return resp, fmt.Errorf("monitor %s: %w", req.Op, err)
		}
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
