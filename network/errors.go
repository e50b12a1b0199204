package network

import "errors"

var (
	// ErrNotReady means the network cannot set up pods right now. It is
	// always wrapped with a human readable reason.
	ErrNotReady = errors.New("network not ready")

	// ErrInvalidPod means the Pod given to Setup or Teardown lacks a
	// required field.
	ErrInvalidPod = errors.New("invalid pod")

	// ErrInvalidConfig means the Manager configuration or a pod CIDR is
	// unusable.
	ErrInvalidConfig = errors.New("invalid network configuration")
)
