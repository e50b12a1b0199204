package server

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/minicri/minicri/container"
)

func TestToStatusCodes(t *testing.T) {
	full := &os.PathError{Op: "write", Path: "/var/lib/minicri/containers/x/container.json.tmp", Err: syscall.ENOSPC}
	for _, c := range []struct {
		err  error
		want codes.Code
	}{
		{fmt.Errorf("create container x: write record: %w", full), codes.ResourceExhausted},
		{fmt.Errorf("start: %w", &os.PathError{Op: "open", Path: "/l", Err: syscall.EDQUOT}), codes.ResourceExhausted},
		{fmt.Errorf("create: %w: %w", container.ErrInvalid, full), codes.InvalidArgument}, // the domain's verdict first
		{fmt.Errorf("run: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{fmt.Errorf("run: %w", syscall.EIO), codes.Unknown},
		{status.Error(codes.NotFound, "x"), codes.NotFound},
	} {
		if got := status.Code(toStatus(c.err)); got != c.want {
			t.Errorf("toStatus(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
