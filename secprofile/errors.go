package secprofile

import (
	"errors"
	"fmt"

	"github.com/minicri/minicri/internal/errdefs"
)

// The CRI's well-known error messages (k8s.io/cri-api/pkg/errors): errors
// wrap them first, so that their message starts with them.
var (
	// ErrInvalid: the request or the artifact is refused for good (the
	// kubelet does not retry).
	ErrInvalid = errors.New("SecurityProfileInvalid")
	// ErrRegistryUnavailable: the registry could not be reached or
	// answered with a server error (retried).
	ErrRegistryUnavailable = errors.New("RegistryUnavailable")
	// ErrNotPresent: no pulled profile answers an oci_ref; a create fails
	// (and never pulls).
	ErrNotPresent = fmt.Errorf("security profile not present (%w)", errdefs.ErrFailedPrecondition)
)

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
