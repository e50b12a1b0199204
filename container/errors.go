package container

import "errors"

// Domain errors; the server maps them to gRPC codes.
var (
	ErrInvalid            = errors.New("invalid argument")
	ErrNotFound           = errors.New("container not found")
	ErrAlreadyExists      = errors.New("container already exists")
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrPermissionDenied: the request names something its pod may not
	// use (another namespace's checkpoint).
	ErrPermissionDenied = errors.New("permission denied")
)
