package container

import (
	"errors"
	"fmt"

	"github.com/minicri/minicri/image"
)

// refuseArtifact fails for an OCI artifact as a container's image (it has
// files, no root filesystem or config: only an image volume can mount it)
// and gives back the lease holder took on it.
func refuseArtifact(images Images, img image.Image, ref, holder string) error {
	if img.ArtifactType == "" {
		return nil
	}
	err := fmt.Errorf("%w: image %q is an OCI artifact (%s), not a container image: mount it as an image volume", ErrInvalid, ref, img.ArtifactType)
	return errors.Join(err, images.Release(holder))
}
