package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/checkpoint/podarchive"
	"github.com/minicri/minicri/internal/steps"
)

// CheckpointPod writes a checkpoint of the pod's running containers ids
// (one consistent cut: all frozen before any is dumped) and the pod's
// config and network state into the empty directory output_path.
func (s *Server) CheckpointPod(ctx context.Context, req *runtimeapi.CheckpointPodRequest) (*runtimeapi.CheckpointPodResponse, error) {
	switch {
	case req.GetPodSandboxId() == "":
		return nil, invalid("pod_sandbox_id is required")
	case len(req.GetContainerIds()) == 0:
		return nil, invalid("container_ids must not be empty")
	case len(req.GetOptions()) > 0:
		return nil, invalid("no checkpoint options are supported")
	}
	dir := filepath.Clean(req.GetOutputPath())
	if err := podarchive.CheckOutput(dir); err != nil {
		return nil, err
	}
	if s.checkpoints == nil {
		return nil, status.Error(codes.Unimplemented, "CheckpointPod is not supported")
	}
	pod, err := s.sandboxes.Get(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	if !pod.Ready {
		return nil, status.Errorf(codes.FailedPrecondition, "pod sandbox %s is not ready", pod.ID)
	}
	archives, err := s.checkpoints.CheckpointPod(ctx, pod.ID, req.GetContainerIds(), dir, 0)
	if err != nil {
		return nil, err
	}
	m := podarchive.Manifest{
		PodID: pod.ID, RuntimeHandler: pod.Config.RuntimeHandler, Pod: pod.Config, IPs: pod.Status.IPs,
		CheckpointedAt: time.Now().UTC(),
	}
	for _, a := range archives {
		m.Containers = append(m.Containers, podarchive.Container{ID: a.ID, Name: a.Name, Archive: a.Archive})
	}
	if err := podarchive.Write(dir, m); err != nil {
		for _, a := range archives {
			_ = os.Remove(filepath.Join(dir, a.Archive))
		}
		return nil, err
	}
	return &runtimeapi.CheckpointPodResponse{}, nil
}

// RestorePod makes a new pod sandbox from the request's config and, in
// it, one container per container config restored from the checkpoint's
// archive of the same name; the containers are CREATED and StartContainer
// restores their processes. On error nothing is left.
func (s *Server) RestorePod(ctx context.Context, req *runtimeapi.RestorePodRequest) (*runtimeapi.RestorePodResponse, error) {
	switch {
	case req.GetConfig().GetMetadata() == nil:
		return nil, invalid("config.metadata is required")
	case len(req.GetContainerConfigs()) == 0:
		return nil, invalid("container_configs must not be empty")
	case len(req.GetOptions()) > 0:
		return nil, invalid("no restore options are supported")
	}
	dir := filepath.Clean(req.GetCheckpointPath())
	m, err := podarchive.Read(dir)
	if err != nil {
		return nil, err
	}
	if err := matchNames(m, req.GetContainerConfigs()); err != nil {
		return nil, err
	}
	r := &podRestore{s: s, req: req, dir: dir, m: m}
	list := []steps.Step{{Name: "run sandbox", Do: r.runSandbox, Undo: r.removeSandbox}}
	for _, cc := range req.GetContainerConfigs() {
		list = append(list, steps.Step{Name: "create " + cc.GetMetadata().GetName(),
			Do: func(ctx context.Context) error { return r.create(ctx, cc) }})
	}
	if _, err := steps.Run(ctx, s.log, list); err != nil {
		return nil, err
	}
	s.log.Info("pod restored", "pod", r.podID, "from", dir, "containers", len(r.out))
	return &runtimeapi.RestorePodResponse{PodSandboxId: r.podID, RestoredContainers: r.out}, nil
}

// matchNames checks that the configs name exactly the checkpoint's containers.
func matchNames(m *podarchive.Manifest, ccs []*runtimeapi.ContainerConfig) error {
	seen := map[string]bool{}
	for _, cc := range ccs {
		name := cc.GetMetadata().GetName()
		if name == "" || seen[name] {
			return invalid("container_configs need unique, non-empty metadata names")
		}
		seen[name] = true
		if m.Archive("", name) == "" {
			return status.Errorf(codes.InvalidArgument, "the checkpoint holds no container %q", name)
		}
	}
	if len(seen) != len(m.Containers) {
		return status.Errorf(codes.InvalidArgument, "container_configs name %d containers; the checkpoint holds %d", len(seen), len(m.Containers))
	}
	return nil
}

// podRestore carries one RestorePod through its steps.
type podRestore struct {
	s     *Server
	req   *runtimeapi.RestorePodRequest
	dir   string
	m     *podarchive.Manifest
	podID string
	out   []*runtimeapi.RestoredContainer
}

func (r *podRestore) runSandbox(ctx context.Context) (err error) {
	r.podID, err = r.s.sandboxes.Run(ctx, sandboxConfig(r.req.GetConfig(), r.req.GetRuntimeHandler()))
	return err
}

// removeSandbox removes the new pod and, with it, its containers.
func (r *podRestore) removeSandbox(ctx context.Context) error {
	if r.podID == "" {
		return nil
	}
	var errs []error
	for _, c := range r.out {
		errs = append(errs, r.s.containers.Remove(ctx, c.ContainerId))
	}
	errs = append(errs, r.s.sandboxes.Stop(ctx, r.podID), r.s.sandboxes.Remove(ctx, r.podID))
	return errors.Join(errs...)
}

func (r *podRestore) create(ctx context.Context, cc *runtimeapi.ContainerConfig) error {
	cfg := containerConfig(cc)
	cfg.Image = r.m.Archive(r.dir, cc.GetMetadata().GetName())
	id, err := r.s.containers.Create(ctx, r.podID, cfg)
	if err != nil {
		return err
	}
	r.out = append(r.out, &runtimeapi.RestoredContainer{Name: cc.GetMetadata().GetName(), ContainerId: id})
	return nil
}
