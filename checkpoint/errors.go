package checkpoint

import "github.com/minicri/minicri/container"

// A checkpoint or a restore fails as the container operation it is
// (CheckpointContainer, CreateContainer, StartContainer): its errors are
// container's, which the server maps to gRPC codes.
var (
	ErrInvalid            = container.ErrInvalid
	ErrFailedPrecondition = container.ErrFailedPrecondition
	ErrPermissionDenied   = container.ErrPermissionDenied
)
