package cdi

import "errors"

// Errors callers tell apart.
var (
	// ErrInvalidName: a requested name is not a fully qualified CDI device
	// name (vendor.com/class=name), or a cdi.k8s.io/ annotation is malformed.
	ErrInvalidName = errors.New("invalid CDI device name")
	// ErrUnknownDevice: no spec in the spec directories defines the device.
	ErrUnknownDevice = errors.New("unknown CDI device")
	// ErrBadSpec: the spec that defines the device cannot be applied (an
	// unsafe path, a missing host device node...).
	ErrBadSpec = errors.New("unusable CDI spec")
)
