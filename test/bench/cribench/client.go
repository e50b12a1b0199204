package main

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// client is a CRI connection with a per-RPC timeout.
type client struct {
	conn    *grpc.ClientConn
	rt      runtimeapi.RuntimeServiceClient
	img     runtimeapi.ImageServiceClient
	timeout time.Duration
}

func dial(endpoint string, timeout time.Duration) (*client, error) {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", endpoint, err)
	}
	return &client{
		conn:    conn,
		rt:      runtimeapi.NewRuntimeServiceClient(conn),
		img:     runtimeapi.NewImageServiceClient(conn),
		timeout: timeout,
	}, nil
}

func (c *client) close() { _ = c.conn.Close() }

// timed runs one RPC under the client's timeout and returns its latency.
func (c *client) timed(name string, f func(context.Context) error) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	t := time.Now()
	if err := f(ctx); err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return time.Since(t), nil
}

func (c *client) version() (string, error) {
	var v *runtimeapi.VersionResponse
	_, err := c.timed("Version", func(ctx context.Context) (err error) {
		v, err = c.rt.Version(ctx, &runtimeapi.VersionRequest{})
		return err
	})
	if err != nil {
		return "", err
	}
	return v.RuntimeName + " " + v.RuntimeVersion, nil
}

// imagePresent reports whether ref is in the runtime's image store.
func (c *client) imagePresent(ref string) (bool, uint64, error) {
	var r *runtimeapi.ImageStatusResponse
	_, err := c.timed("ImageStatus", func(ctx context.Context) (err error) {
		r, err = c.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		return err
	})
	if err != nil {
		return false, 0, err
	}
	if r.GetImage() == nil {
		return false, 0, nil
	}
	return true, r.GetImage().GetSize(), nil
}

// pull pulls ref and returns the PullImage latency.
func (c *client) pull(ref string) (time.Duration, error) {
	return c.timed("PullImage "+ref, func(ctx context.Context) error {
		_, err := c.img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		return err
	})
}
