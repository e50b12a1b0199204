package server

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/image"
)

// Images is the image store.
type Images interface {
	Pull(ctx context.Context, ref string, auth *image.AuthConfig) (image.Image, error)
	Status(ref string) (image.Image, error)
	List(filter string) ([]image.Image, error)
	Remove(ref string) error
	FsInfo() (image.FsUsage, error)
}

// PullImage pulls an image from its registry.
func (s *Server) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	ref := req.GetImage().GetImage()
	if ref == "" {
		return nil, invalid("image.image is required")
	}
	if err := s.checkImageHandler(req.GetImage()); err != nil {
		return nil, err
	}
	img, err := s.images.Pull(ctx, ref, authFromCRI(req.GetAuth()))
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PullImageResponse{ImageRef: img.ID}, nil
}

// ImageStatus reports one image; an unknown image is an empty response.
func (s *Server) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	ref := req.GetImage().GetImage()
	if ref == "" {
		return nil, invalid("image.image is required")
	}
	if err := s.checkImageHandler(req.GetImage()); err != nil {
		return nil, err
	}
	img, err := s.images.Status(ref)
	if errors.Is(err, image.ErrNotFound) {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.ImageStatusResponse{Image: imageToCRI(img)}
	if req.GetVerbose() {
		info, _ := json.Marshal(map[string]any{"imageSpec": img.Config, "layers": img.Layers, "manifestDigest": img.ManifestDigest})
		resp.Info = map[string]string{"info": string(info)}
	}
	return resp, nil
}

// ListImages lists images, optionally those matching a reference.
func (s *Server) ListImages(_ context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	imgs, err := s.images.List(req.GetFilter().GetImage().GetImage())
	if err != nil {
		return nil, err
	}
	out := make([]*runtimeapi.Image, 0, len(imgs))
	for _, img := range imgs {
		out = append(out, imageToCRI(img))
	}
	return &runtimeapi.ListImagesResponse{Images: out}, nil
}

// RemoveImage removes an image and all its tags; an unknown image is fine.
func (s *Server) RemoveImage(_ context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	ref := req.GetImage().GetImage()
	if ref == "" {
		return nil, invalid("image.image is required")
	}
	if err := s.images.Remove(ref); err != nil && !errors.Is(err, image.ErrNotFound) {
		return nil, err
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

// ImageFsInfo reports the space and inodes the image store uses.
func (s *Server) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	u, err := s.images.FsInfo()
	if err != nil {
		return nil, err
	}
	fs := &runtimeapi.FilesystemUsage{
		Timestamp:  u.Timestamp,
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: u.Mountpoint},
		UsedBytes:  &runtimeapi.UInt64Value{Value: u.UsedBytes},
		InodesUsed: &runtimeapi.UInt64Value{Value: u.InodesUsed},
	}
	resp := &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{fs}}
	if s.containers != nil {
		cu, err := s.containers.FsInfo()
		if err != nil {
			return nil, err
		}
		resp.ContainerFilesystems = []*runtimeapi.FilesystemUsage{{
			Timestamp: cu.Timestamp.UnixNano(), FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: cu.Mountpoint},
			UsedBytes: u64(cu.UsedBytes), InodesUsed: u64(cu.InodesUsed),
		}}
	}
	return resp, nil
}

func imageToCRI(img image.Image) *runtimeapi.Image {
	out := &runtimeapi.Image{
		Id:          img.ID,
		RepoTags:    img.RepoTags,
		RepoDigests: img.RepoDigests,
		Size:        img.Size,
		Spec:        &runtimeapi.ImageSpec{Image: img.ID},
		Pinned:      img.Pinned,
	}
	// The config's User is "uid", "uid:gid", "name" or "name:group".
	user, _, _ := strings.Cut(img.User, ":")
	if uid, err := strconv.ParseInt(user, 10, 64); err == nil {
		out.Uid = &runtimeapi.Int64Value{Value: uid}
	} else {
		out.Username = user
	}
	return out
}
