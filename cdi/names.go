package cdi

import (
	"fmt"
	"slices"

	"tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"
)

// AnnotationPrefix starts the keys of the older, annotation form of a CDI
// request: cdi.k8s.io/<anything> = <device>[,<device>...].
const AnnotationPrefix = cdi.AnnotationPrefix

// Requested lists the CDI devices a container asks for, each once: those
// of the CRI field (cdi_devices, in order), then those of its cdi.k8s.io/
// annotations (sorted, the annotations being a map). Only the container's
// own annotations may carry them: the kubelet fills those from device
// plugins, never from the pod's metadata.
func Requested(fromField []string, annotations map[string]string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, n := range fromField {
		if _, _, _, err := parser.ParseQualifiedName(n); err != nil {
			return nil, fmt.Errorf("%w %q: %w", ErrInvalidName, n, err)
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	_, annotated, err := cdi.ParseAnnotations(annotations)
	if err != nil {
		return nil, fmt.Errorf("%w in a %s annotation: %w", ErrInvalidName, AnnotationPrefix, err)
	}
	slices.Sort(annotated)
	for _, n := range annotated {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out, nil
}
