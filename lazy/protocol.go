package lazy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// The protocol of minicri-lazyfs's socket: one JSON request per
// connection, one JSON response, then the server closes it.

// Source is where a layer's blob is read from.
type Source struct {
	URL    string      `json:"url"`
	Header http.Header `json:"header,omitempty"` // sent with each range request (credentials: never listed back)
	Size   int64       `json:"size"`
	CAFile string      `json:"ca_file,omitempty"` // PEM roots for an https URL; the system's when empty
}

// MountSpec asks for a layer to be served at a mount point.
type MountSpec struct {
	Mountpoint   string        `json:"mountpoint"`
	Dir          string        `json:"dir"` // the layer's cache directory
	TOCDigest    string        `json:"toc_digest"`
	Source       Source        `json:"source"`
	FetchTimeout time.Duration `json:"fetch_timeout,omitempty"` // DefaultFetchTimeout when 0
	// Prefetch starts fetching the prioritized files as the layer mounts:
	// a read of one of them waits for that fetch.
	Prefetch   bool `json:"prefetch,omitempty"`
	Background bool `json:"background,omitempty"` // then fetch the rest in the background (see Options.Silence)
	// Tail is the end of the blob as the daemon read it (see Options.Tail).
	Tail []byte `json:"tail,omitempty"`
}

// MountStatus is one served layer as List reports it.
type MountStatus struct {
	Mountpoint string `json:"mountpoint"`
	Dir        string `json:"dir"`
	TOCDigest  string `json:"toc_digest"`
	URL        string `json:"url"`
	Fetched    int64  `json:"fetched"`
	Total      int64  `json:"total"`
	Complete   bool   `json:"complete"`
	// Denied: the registry refused the source's credentials at its last
	// answer (an expired token): the daemon is to send a fresh source.
	Denied bool `json:"denied,omitempty"`
}

type request struct {
	Op         string     `json:"op"` // mount, unmount, list, source
	Mount      *MountSpec `json:"mount,omitempty"`
	Mountpoint string     `json:"mountpoint,omitempty"`
	Detach     bool       `json:"detach,omitempty"`
}

type response struct {
	Error  string        `json:"error,omitempty"`
	PID    int           `json:"pid,omitempty"`
	Mounts []MountStatus `json:"mounts,omitempty"`
}

// Client talks to a minicri-lazyfs server.
type Client struct{ Socket string }

// Mount asks the server to serve a layer; it answers once the layer is
// mounted (its TOC read and checked; its prefetch started, if asked). Mounting again what
// is already served there is no error.
func (c Client) Mount(ctx context.Context, spec MountSpec) error {
	_, err := c.call(ctx, request{Op: "mount", Mount: &spec})
	return err
}

// Unmount asks the server to unmount; detach unmounts lazily (the layer is
// served until its last user lets go).
func (c Client) Unmount(ctx context.Context, mountpoint string, detach bool) error {
	_, err := c.call(ctx, request{Op: "unmount", Mountpoint: mountpoint, Detach: detach})
	return err
}

// SetSource gives the layer served at mountpoint a fresh source (a new
// token, as the daemon got it): its next range requests use it.
func (c Client) SetSource(ctx context.Context, mountpoint string, src Source) error {
	_, err := c.call(ctx, request{Op: "source", Mountpoint: mountpoint, Mount: &MountSpec{Mountpoint: mountpoint, Source: src}})
	return err
}

// List reports the server's pid and the layers it serves.
func (c Client) List(ctx context.Context) (int, []MountStatus, error) {
	resp, err := c.call(ctx, request{Op: "list"})
	return resp.PID, resp.Mounts, err
}

func (c Client) call(ctx context.Context, req request) (response, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Socket)
	if err != nil {
		return response{}, fmt.Errorf("lazyfs %s: %w", req.Op, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return response{}, fmt.Errorf("lazyfs %s: %w", req.Op, err)
	}
	var resp response
	if err := json.NewDecoder(bufio.NewReader(conn)).Decode(&resp); err != nil {
		return response{}, fmt.Errorf("lazyfs %s: %w", req.Op, errors.Join(err, ctx.Err()))
	}
	if resp.Error != "" {
		return resp, fmt.Errorf("lazyfs %s: %s", req.Op, resp.Error)
	}
	return resp, nil
}
