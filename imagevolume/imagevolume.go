package imagevolume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/image"
	"github.com/minicri/minicri/internal/beneath"
	"github.com/minicri/minicri/internal/errdefs"
	"github.com/minicri/minicri/internal/hostdir"
	"github.com/minicri/minicri/internal/mounts"
)

// Volume is an image volume (KEP-4639) as a container holds it: the
// image is pinned and an overlay of its layers is mounted read-only under
// the container's state directory.
type Volume struct {
	ContainerPath string `json:"container_path"`
	Image         string `json:"image"`    // the reference as requested
	ImageID       string `json:"image_id"` // pinned for the holder
	SubPath       string `json:"sub_path,omitempty"`
	// Source is what is bound into the container: the overlay, or the
	// sub path resolved inside it.
	Source string `json:"source"`
}

// Request is one image mount of a container, already checked.
type Request struct {
	ContainerPath string
	Image         string // the reference
	SubPath       string // relative, inside the image; "": all of it
}

// Images is the part of the image store image volumes use: Acquire pins
// an image for a holder, Release drops the holder's pins; both are
// idempotent per holder.
type Images interface {
	Acquire(ref, holder string) (image.Image, error)
	Release(holder string) error
}

// flags are the mount flags of every image volume, on the host
// and in the container: its layers are an image's data, which may hold
// setuid programs, file capabilities and device nodes that must not work
// there (the container's own image is its rootfs, not a volume).
const flags = unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV

// BindOptions are the bind options of an image volume in the container:
// nosuid, nodev, and those the request adds (noexec).
func BindOptions(requested []string) []string {
	out := []string{"nosuid", "nodev"}
	for _, o := range requested {
		if !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

// Acquire pins the image of each request and mounts its layers read-only
// under dir (dir/<n>); holder holds the pins. On error it also returns what
// it mounted so far.
//
// With a pod user namespace (usernsPath set), each layer is seen through an
// idmapped mount first, as for the rootfs, so the image's root-owned files
// show as the pod's root.
func Acquire(images Images, holder string, reqs []Request, dir, usernsPath string) ([]Volume, error) {
	var out []Volume
	for _, mt := range reqs {
		// Only root may enter: the volumes hold the images' setuid files
		// (see container/hostdirs.go).
		if err := os.Mkdir(dir, hostdir.Private); err != nil && !errors.Is(err, os.ErrExist) {
			return out, fmt.Errorf("create image volumes dir: %w", err)
		}
		img, err := images.Acquire(mt.Image, holder)
		if err != nil {
			return out, fmt.Errorf("image volume at %q: %w", mt.ContainerPath, err)
		}
		out = append(out, Volume{ContainerPath: mt.ContainerPath, Image: mt.Image, ImageID: img.ID, SubPath: mt.SubPath})
		root := filepath.Join(dir, strconv.Itoa(len(out)-1))
		if usernsPath != "" {
			views, err := mounts.IDMapLayers(img.Layers, root+".idmap", usernsPath)
			if err != nil {
				return out, fmt.Errorf("image volume at %q: %w", mt.ContainerPath, err)
			}
			img.Layers = views
		}
		if err := mountImageLayers(img, root); err != nil {
			return out, fmt.Errorf("image volume at %q: %w", mt.ContainerPath, err)
		}
		src, err := resolveSubPath(root, mt.SubPath)
		if err != nil {
			return out, fmt.Errorf("image volume at %q: %w", mt.ContainerPath, err)
		}
		out[len(out)-1].Source = src
	}
	return out, nil
}

// mountImageLayers mounts an overlay of the image's layers, lower dirs
// only, so that it is read-only and writes nothing to the layers.
func mountImageLayers(img image.Image, target string) error {
	// A mount point (in a 0700 directory): the overlay mounted on it shows
	// the image's root mode, this one is hidden.
	if err := os.Mkdir(target, 0o755); err != nil { //nolint:gosec // see above
		return fmt.Errorf("create image volume mount point: %w", err)
	}
	layers := img.Layers
	switch len(layers) {
	case 0: // an empty, read-only directory
		return bindReadonly(target, target)
	case 1: // overlayfs wants two lower dirs when it has no upper one
		return bindReadonly(layers[0], target)
	}
	lower := make([]string, 0, len(layers))
	for i := len(layers) - 1; i >= 0; i-- {
		lower = append(lower, layers[i])
	}
	if err := mounts.Overlay(target, lower, "", "", flags); err != nil {
		return fmt.Errorf("image volume: %w", err)
	}
	return nil
}

// bindReadonly binds src at target, read-only, nosuid, nodev.
func bindReadonly(src, target string) error {
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind image layer: %w", err)
	}
	if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|flags, ""); err != nil {
		return errors.Join(fmt.Errorf("remount image layer read-only: %w", err), mounts.UnmountAll(target))
	}
	return nil
}

// resolveSubPath resolves sub inside root, symlinks included, without
// leaving root; it must exist.
func resolveSubPath(root, sub string) (string, error) {
	if sub == "" {
		return root, nil
	}
	fd, err := unix.Open(root, unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
	if err != nil {
		return "", fmt.Errorf("open image volume root: %w", err)
	}
	defer unix.Close(fd)
	sfd, err := beneath.OpenInRoot(fd, sub, unix.O_PATH)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return "", fmt.Errorf("%w: image sub path %q does not exist in the image", errdefs.ErrInvalid, sub)
	}
	if err != nil {
		return "", fmt.Errorf("resolve image sub path %q: %w", sub, err)
	}
	defer unix.Close(sfd)
	p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", sfd))
	if err != nil {
		return "", fmt.Errorf("resolve image sub path %q: %w", sub, err)
	}
	return p, nil
}

// Release unmounts the image volumes under dir, removes dir, then drops the
// pins of holder.
func Release(images Images, holder, dir string) error {
	if err := Unmount(dir); err != nil {
		// A volume still mounted keeps using its layers: keep the pins.
		return err
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove image volumes dir: %w", err)
	}
	if err := images.Release(holder); err != nil {
		return fmt.Errorf("release images of image volumes: %w", err)
	}
	return nil
}

// Unmount unmounts every image volume under dir; it is idempotent and
// needs no record, so crash recovery can run it.
func Unmount(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list image volumes: %w", err)
	}
	var errs []error
	for _, e := range ents { // "<n>" sorts before its idmapped layers "<n>.idmap"
		p := filepath.Join(dir, e.Name())
		if err := mounts.UnmountAll(p); err != nil {
			errs = append(errs, err)
			continue
		}
		if strings.HasSuffix(p, ".idmap") {
			views, _ := os.ReadDir(p)
			for _, v := range views {
				if err := mounts.UnmountAll(filepath.Join(p, v.Name())); err != nil {
					errs = append(errs, err)
				}
			}
			if err := os.RemoveAll(p); err != nil {
				errs = append(errs, fmt.Errorf("remove idmapped layer views: %w", err))
			}
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove image volume mount point: %w", err))
		}
	}
	return errors.Join(errs...)
}
