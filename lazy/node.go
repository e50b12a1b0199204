package lazy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Node is the node's minicri-lazyfs as the daemon uses it: each call first
// makes sure the server answers on Socket (StartServer: the running one,
// else a new one from Command), so a server that died is started again.
type Node struct {
	Socket  string
	Command ServerCommand

	mu sync.Mutex // one start at a time: two would race for the socket
}

// NewNode is the server whose socket and log are in dir (created, 0700),
// run from program.
func NewNode(dir, program string) (*Node, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lazyfs dir: %w", err)
	}
	return &Node{Socket: filepath.Join(dir, "lazyfs.sock"),
		Command: ServerCommand{Path: program, Log: filepath.Join(dir, "lazyfs.log")}}, nil
}

func (n *Node) client(ctx context.Context) (Client, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, err := StartServer(ctx, n.Socket, n.Command); err != nil {
		return Client{}, err
	}
	return Client{Socket: n.Socket}, nil
}

// Mount serves a layer (see Client.Mount).
func (n *Node) Mount(ctx context.Context, spec MountSpec) error {
	c, err := n.client(ctx)
	if err != nil {
		return err
	}
	return c.Mount(ctx, spec)
}

// Unmount stops serving mountpoint; a busy one is detached (its layer is
// closed once its last user lets go).
func (n *Node) Unmount(ctx context.Context, mountpoint string) error {
	c, err := n.client(ctx)
	if err != nil {
		return err
	}
	err = c.Unmount(ctx, mountpoint, false)
	if err != nil && !strings.HasSuffix(err.Error(), notServed) {
		err = c.Unmount(ctx, mountpoint, true)
	}
	if err != nil && strings.HasSuffix(err.Error(), notServed) {
		return nil // not (or no more) served: nothing to do
	}
	return err
}

// List is the layers the server serves.
func (n *Node) List(ctx context.Context) ([]MountStatus, error) {
	c, err := n.client(ctx)
	if err != nil {
		return nil, err
	}
	_, mounts, err := c.List(ctx)
	return mounts, err
}

// SetSource gives a served layer a fresh source (see Client.SetSource).
func (n *Node) SetSource(ctx context.Context, mountpoint string, src Source) error {
	c, err := n.client(ctx)
	if err != nil {
		return err
	}
	return c.SetSource(ctx, mountpoint, src)
}
