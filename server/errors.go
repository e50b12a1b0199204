package server

import (
	"context"
	"errors"
	"syscall"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/minicri/minicri/checkpoint/podarchive"
	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/hook"
	"github.com/minicri/minicri/image"
	"github.com/minicri/minicri/sandbox"
	"github.com/minicri/minicri/secprofile"
)

// codeOf maps domain errors to gRPC codes. It is the only place that does.
var codeOf = []struct {
	err  error
	code codes.Code
}{
	// First: their messages start with the CRI's well-known prefixes
	// (SecurityProfileInvalid, RegistryUnavailable), whatever they wrap.
	{secprofile.ErrInvalid, codes.InvalidArgument},
	{secprofile.ErrRegistryUnavailable, codes.Unavailable},
	{secprofile.ErrNotPresent, codes.FailedPrecondition},
	{sandbox.ErrInvalid, codes.InvalidArgument},
	{sandbox.ErrNotFound, codes.NotFound},
	{sandbox.ErrAlreadyExists, codes.AlreadyExists},
	{sandbox.ErrFailedPrecondition, codes.FailedPrecondition},
	{container.ErrInvalid, codes.InvalidArgument},
	{container.ErrNotFound, codes.NotFound},
	{container.ErrAlreadyExists, codes.AlreadyExists},
	{container.ErrFailedPrecondition, codes.FailedPrecondition},
	{container.ErrPermissionDenied, codes.PermissionDenied},
	{hook.ErrPermissionDenied, codes.PermissionDenied},
	{podarchive.ErrInvalid, codes.InvalidArgument},
	{podarchive.ErrFailedPrecondition, codes.FailedPrecondition},
	{image.ErrNotFound, codes.NotFound},
	{image.ErrInvalidReference, codes.InvalidArgument},
	{image.ErrNoProgress, codes.DeadlineExceeded},
	{image.ErrLayerTooLarge, codes.ResourceExhausted},
	{image.ErrBadLayer, codes.InvalidArgument},
	{image.ErrBadArtifact, codes.InvalidArgument},
	// A full disk or quota anywhere below (state, rootfs, logs, content)
	// is the node out of a resource, not an unknown failure.
	{syscall.ENOSPC, codes.ResourceExhausted},
	{syscall.EDQUOT, codes.ResourceExhausted},
	{context.DeadlineExceeded, codes.DeadlineExceeded},
	{context.Canceled, codes.Canceled},
}

// toStatus converts err into a gRPC status error; errors that already carry a
// status keep it; anything else is Unknown, as gRPC itself reports.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	for _, c := range codeOf {
		if errors.Is(err, c.err) {
			return status.Error(c.code, err.Error())
		}
	}
	return status.Error(codes.Unknown, err.Error())
}

// invalid reports a malformed request.
func invalid(msg string) error { return status.Error(codes.InvalidArgument, msg) }
