package container

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/minicri/minicri/imagevolume"
)

// ImageMount is an image volume (KEP-4639) as the container holds it: the
// image is pinned (for imageVolumesHolder) and an overlay of its layers is
// mounted read-only under the container's state directory (see
// imagevolume.Volume).
type ImageMount = imagevolume.Volume

// imageVolumesHolder is who holds the leases of a container's image volumes.
func imageVolumesHolder(id string) string { return id + "/imagevols" }

// imageVolumesDir holds one overlay mount point per image volume.
func (m *Manager) imageVolumesDir(id string) string {
	return filepath.Join(m.ctrStateDir(id), "imagevols")
}

// validateImageMount rejects what cannot be an image volume.
func validateImageMount(mt *Mount) error {
	if mt.ContainerPath == "" || !filepath.IsAbs(mt.ContainerPath) {
		return fmt.Errorf("%w: image mount container path %q is not absolute", ErrInvalid, mt.ContainerPath)
	}
	if !mt.Readonly {
		return fmt.Errorf("%w: image mount at %q must be read-only", ErrInvalid, mt.ContainerPath)
	}
	if mt.HostPath != "" {
		return fmt.Errorf("%w: image mount at %q cannot have a host path", ErrInvalid, mt.ContainerPath)
	}
	if mt.Propagation != PropagationPrivate {
		return fmt.Errorf("%w: image mount at %q needs private propagation", ErrInvalid, mt.ContainerPath)
	}
	if p := mt.ImageSubPath; p != "" {
		if filepath.IsAbs(p) || slices.Contains(strings.Split(p, "/"), "..") {
			return fmt.Errorf("%w: image sub path %q must be relative and stay inside the image", ErrInvalid, p)
		}
	}
	return checkMountOptions(*mt)
}

// acquireImageVolumes checks every image mount of cri, then has each
// mounted under dir (see imagevolume.Acquire); holder holds the pins. On
// error it also returns what it mounted so far.
func acquireImageVolumes(images Images, holder string, cri []Mount, dir, usernsPath string) ([]ImageMount, error) {
	var reqs []imagevolume.Request
	for i := range cri {
		if cri[i].Image == "" {
			continue
		}
		if err := validateImageMount(&cri[i]); err != nil {
			return nil, err
		}
		reqs = append(reqs, imagevolume.Request{ContainerPath: cri[i].ContainerPath, Image: cri[i].Image, SubPath: cri[i].ImageSubPath})
	}
	return imagevolume.Acquire(images, holder, reqs, dir, usernsPath)
}

// withImageVolumes returns the CRI mounts with each image mount replaced by
// a read-only, nosuid, nodev bind of its resolved source (with the mount
// options the request adds), for the spec builder.
func withImageVolumes(cri []Mount, ims []ImageMount) []Mount {
	out := make([]Mount, 0, len(cri))
	n := 0
	for _, mt := range cri {
		if mt.Image != "" && n < len(ims) {
			out = append(out, Mount{ContainerPath: mt.ContainerPath, HostPath: ims[n].Source, Readonly: true,
				MountOptions: imagevolume.BindOptions(mt.MountOptions)})
			n++
			continue
		}
		out = append(out, mt)
	}
	return out
}

// releaseImageVolumes unmounts a container's image volumes (found on disk,
// so a crashed creation is covered too) and drops their pins.
func (m *Manager) releaseImageVolumes(rec Record) error {
	if err := imagevolume.Unmount(m.imageVolumesDir(rec.ID)); err != nil {
		return err
	}
	if err := m.opts.Images.Release(imageVolumesHolder(rec.ID)); err != nil {
		m.log.Warn("release images of image volumes", "container", rec.ID, "err", err)
	}
	return nil
}

// reacquireImageVolumes pins again, after a restart, the images a recovered
// container uses as volumes.
func (m *Manager) reacquireImageVolumes(rec Record) {
	for _, im := range rec.ImageMounts {
		if _, err := m.opts.Images.Acquire(im.ImageID, imageVolumesHolder(rec.ID)); err != nil {
			m.log.Warn("image of recovered image volume is gone", "container", rec.ID, "image", im.ImageID, "err", err)
		}
	}
}
