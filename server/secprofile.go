package server

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/image"
	"github.com/minicri/minicri/secprofile"
)

// Profiles is the store of security profiles pulled from registries
// (KEP-6061; secprofile.Store).
type Profiles interface {
	Pull(ctx context.Context, ref string, auth *image.AuthConfig, kind secprofile.Kind) (cached bool, err error)
	List() []secprofile.Info
	Remove(digest string) error
}

// PullSecurityProfile pulls a seccomp profile (an OCI artifact) by its
// digest-pinned reference; a present one answers cached, with no registry
// request.
func (s *Server) PullSecurityProfile(ctx context.Context, req *runtimeapi.PullSecurityProfileRequest) (*runtimeapi.PullSecurityProfileResponse, error) {
	if s.profiles == nil {
		return s.UnimplementedImageServiceServer.PullSecurityProfile(ctx, req)
	}
	ref := req.GetImage().GetImage()
	if ref == "" {
		return nil, invalid(secprofile.ErrInvalid.Error() + ": image.image is required")
	}
	if err := s.checkImageHandler(req.GetImage()); err != nil {
		return nil, err
	}
	kind := secprofile.Kind(req.GetProfileKind())
	if req.GetProfileKind() == runtimeapi.SecurityProfileKind_Seccomp {
		kind = secprofile.KindSeccomp
	}
	cached, err := s.profiles.Pull(ctx, ref, authFromCRI(req.GetAuth()), kind)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PullSecurityProfileResponse{Cached: cached}, nil
}

// ListSecurityProfiles lists the pulled profiles (never images).
func (s *Server) ListSecurityProfiles(ctx context.Context, req *runtimeapi.ListSecurityProfilesRequest) (*runtimeapi.ListSecurityProfilesResponse, error) {
	if s.profiles == nil {
		return s.UnimplementedImageServiceServer.ListSecurityProfiles(ctx, req)
	}
	list := s.profiles.List()
	out := make([]*runtimeapi.SecurityProfileInfo, 0, len(list))
	for _, p := range list {
		out = append(out, &runtimeapi.SecurityProfileInfo{Digest: p.Digest, Refs: p.Refs, Size: p.Size})
	}
	return &runtimeapi.ListSecurityProfilesResponse{Profiles: out}, nil
}

// RemoveSecurityProfile removes a pulled profile by digest; one already
// gone is no error, and containers keep the filter they run with.
func (s *Server) RemoveSecurityProfile(ctx context.Context, req *runtimeapi.RemoveSecurityProfileRequest) (*runtimeapi.RemoveSecurityProfileResponse, error) {
	if s.profiles == nil {
		return s.UnimplementedImageServiceServer.RemoveSecurityProfile(ctx, req)
	}
	if req.GetDigest() == "" {
		return nil, invalid("digest is required")
	}
	if err := s.profiles.Remove(req.GetDigest()); err != nil {
		return nil, err
	}
	return &runtimeapi.RemoveSecurityProfileResponse{}, nil
}

// authFromCRI is a pull's credentials; nil when the request has none.
func authFromCRI(a *runtimeapi.AuthConfig) *image.AuthConfig {
	if a == nil {
		return nil
	}
	return &image.AuthConfig{
		Username: a.GetUsername(), Password: a.GetPassword(), Auth: a.GetAuth(),
		ServerAddress: a.GetServerAddress(), IdentityToken: a.GetIdentityToken(), RegistryToken: a.GetRegistryToken(),
	}
}
