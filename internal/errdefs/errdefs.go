// Package errdefs holds the kinds of error container/ shares with the
// packages it builds a container from (user, devices, security,
// imagevolume): a request that cannot be honoured as sent (ErrInvalid) and
// one the node's state refuses (ErrFailedPrecondition). container re-exports
// them (container.ErrInvalid is ErrInvalid), so an error of any of them
// maps to one gRPC code in server/errors.go.
//
// It imports only the standard library.
package errdefs

import "errors"

var (
	// ErrInvalid: the request is malformed or asks what cannot be given.
	ErrInvalid = errors.New("invalid argument")
	// ErrFailedPrecondition: the node is not in a state to honour the
	// request (a profile not loaded, a device no spec defines).
	ErrFailedPrecondition = errors.New("failed precondition")
)
