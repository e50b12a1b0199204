package container

import (
	"errors"

	"github.com/minicri/minicri/internal/errdefs"
)

// Domain errors; the server maps them to gRPC codes.
var (
	// ErrInvalid and ErrFailedPrecondition are errdefs' kinds, which the
	// packages a container is built from (user, devices, security,
	// imagevolume) wrap too.
	ErrInvalid            = errdefs.ErrInvalid
	ErrNotFound           = errors.New("container not found")
	ErrAlreadyExists      = errors.New("container already exists")
	ErrFailedPrecondition = errdefs.ErrFailedPrecondition
	// ErrPermissionDenied: the request names something its pod may not
	// use (another namespace's checkpoint).
	ErrPermissionDenied = errors.New("permission denied")
)
