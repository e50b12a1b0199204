package server

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/image"
	"github.com/minicri/minicri/secprofile"
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

// TestToStatusKeepsWellKnownPrefixes: the CRI's well-known messages stay
// first in the gRPC message, whatever else the error wraps, and an unknown
// profile_kind is refused with one too.
func TestToStatusKeepsWellKnownPrefixes(t *testing.T) {
	for _, c := range []struct {
		err    error
		code   codes.Code
		prefix string
	}{
		{fmt.Errorf("%w: a profile of 2 MiB: %w", secprofile.ErrInvalid, image.ErrBadArtifact), codes.InvalidArgument, "SecurityProfileInvalid: "},
		{fmt.Errorf("%w: fetch: %w", secprofile.ErrRegistryUnavailable, image.ErrNotFound), codes.Unavailable, "RegistryUnavailable: "},
		{fmt.Errorf("seccomp profile: %w: x", secprofile.ErrNotPresent), codes.FailedPrecondition, "seccomp profile: "},
	} {
		st := status.Convert(toStatus(c.err))
		if st.Code() != c.code || !strings.HasPrefix(st.Message(), c.prefix) {
			t.Errorf("toStatus(%v) = %v %q, want %v %q...", c.err, st.Code(), st.Message(), c.code, c.prefix)
		}
	}
	err := checkEnums(&runtimeapi.PullSecurityProfileRequest{ProfileKind: 9})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.HasPrefix(st.Message(), "SecurityProfileInvalid") {
		t.Errorf("profile_kind 9: %v", err)
	}
}
