package sandbox

import "errors"

// Domain errors; the server maps them to gRPC codes.
var (
	ErrInvalid            = errors.New("invalid argument")
	ErrNotFound           = errors.New("pod sandbox not found")
	ErrAlreadyExists      = errors.New("pod sandbox already exists")
	ErrFailedPrecondition = errors.New("failed precondition")
)
