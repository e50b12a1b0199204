package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/test/registry/fixture"
)

// KEP-6061: seccomp profiles pulled from a registry (PullSecurityProfile),
// listed and removed apart from images, applied (on their base) by
// CreateContainer and RunPodSandbox with seccomp type OCI, never pulled there.

// denyMkdir denies mkdir(at) with EPERM; everything else is allowed.
const denyMkdir = `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","mkdirat"],"action":"SCMP_ACT_ERRNO","errnoRet":1}]}`

// denyRmdir is a Localhost base that denies rmdir (and unlinkat, which
// some libcs use for it) with EPERM.
const denyRmdir = `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["rmdir","unlinkat"],"action":"SCMP_ACT_ERRNO","errnoRet":1}]}`

const profileHost = "profiles.example"

// pushProfile serves a profile artifact on srv and returns its ref as the
// instance reaches it (profiles.example/<repo>@sha256:...).
func pushProfile(t *testing.T, srv *fixture.Server, repo, configType string, layers ...string) string {
	t.Helper()
	var bs [][]byte
	for _, l := range layers {
		bs = append(bs, []byte(l))
	}
	m, blobs := fixture.ProfileManifest(configType, bs...)
	return pushRawProfile(t, srv, repo, m, fixture.OCIManifestType, blobs...)
}

func pushRawProfile(t *testing.T, srv *fixture.Server, repo string, m []byte, mt string, blobs ...[]byte) string {
	t.Helper()
	ref, err := srv.PushRaw(repo, m, mt, blobs...)
	if err != nil {
		t.Fatal(err)
	}
	_, digest, _ := strings.Cut(ref, "@")
	return profileHost + "/" + repo + "@" + digest
}

func (i *instance) pullProfile(ref string, auth *runtimeapi.AuthConfig) (*runtimeapi.PullSecurityProfileResponse, error) {
	return i.images().PullSecurityProfile(i.t.Context(), &runtimeapi.PullSecurityProfileRequest{
		Image: &runtimeapi.ImageSpec{Image: ref, UserSpecifiedImage: ref}, Auth: auth, ProfileKind: runtimeapi.SecurityProfileKind_Seccomp})
}

func (i *instance) listProfiles(t *testing.T) []*runtimeapi.SecurityProfileInfo {
	t.Helper()
	resp, err := i.images().ListSecurityProfiles(ctx(t), &runtimeapi.ListSecurityProfilesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetProfiles()
}

// profileStoreFiles lists what the profile store holds on disk.
func (i *instance) profileStoreFiles() []string {
	var out []string
	for _, sub := range []string{"profiles", "records"} {
		ents, _ := os.ReadDir(filepath.Join(i.dir, "root", "secprofiles", sub))
		for _, e := range ents {
			out = append(out, sub+"/"+e.Name())
		}
	}
	return out
}

// TestSecurityProfilePullCachedListRemoveRestart: a private registry's
// profile needs the request's credentials; a second pull answers cached
// with no registry request; it is listed as a profile, never as an image;
// its record survives a daemon restart; Remove is idempotent and leaves
// nothing behind.
func TestSecurityProfilePullCachedListRemoveRestart(t *testing.T) {
	srv := startRegistry(t, fixture.Options{Username: "prof", Password: "s3cret"})
	i := newInstance(t, withRegistry())
	hostsFor(t, i, profileHost, srv.URL)
	if st, err := i.rt.Status(ctx(t), &runtimeapi.StatusRequest{}); err != nil || !st.GetFeatures().GetSeccompProfileOci() {
		t.Errorf("RuntimeFeatures.seccomp_profile_oci not advertised: %v %v", st.GetFeatures(), err)
	}
	ref := pushProfile(t, srv, "minicri/strict", fixture.SeccompProfileConfigType, denyMkdir)
	auth := &runtimeapi.AuthConfig{Username: "prof", Password: "s3cret"}
	if _, err := i.pullProfile(ref, nil); err == nil {
		t.Fatal("a private profile pulled without credentials")
	}
	if files := i.profileStoreFiles(); len(files) != 0 {
		t.Errorf("a refused pull left %v", files)
	}
	if resp, err := i.pullProfile(ref, auth); err != nil || resp.GetCached() {
		t.Fatalf("first pull: %v, cached %v", err, resp.GetCached())
	}
	srv.ResetCounters()
	if resp, err := i.pullProfile(ref, auth); err != nil || !resp.GetCached() {
		t.Fatalf("second pull: %v, cached %v", err, resp.GetCached())
	}
	if reqs := srv.Requests(); len(reqs) != 0 {
		t.Errorf("a present profile's pull asked the registry: %v", reqs)
	}
	list := i.listProfiles(t)
	if len(list) != 1 || len(list[0].GetRefs()) != 1 || list[0].GetRefs()[0] != ref || list[0].GetSize() != uint64(len(denyMkdir)) {
		t.Fatalf("ListSecurityProfiles: %v", list)
	}
	imgs, err := i.images().ListImages(ctx(t), &runtimeapi.ListImagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range imgs.GetImages() {
		if strings.Contains(strings.Join(img.GetRepoDigests(), " ")+img.GetId(), "strict") {
			t.Errorf("the profile shows as an image: %v", img)
		}
	}
	i.stop()
	i.start()
	if again := i.listProfiles(t); len(again) != 1 || again[0].GetDigest() != list[0].GetDigest() || again[0].GetRefs()[0] != ref {
		t.Fatalf("after a restart: %v", again)
	}
	if resp, err := i.pullProfile(ref, auth); err != nil || !resp.GetCached() || len(srv.Requests()) != 0 {
		t.Errorf("pull after a restart: %v, cached %v, requests %v", err, resp.GetCached(), srv.Requests())
	}
	for range 2 {
		if _, err := i.images().RemoveSecurityProfile(ctx(t), &runtimeapi.RemoveSecurityProfileRequest{Digest: list[0].GetDigest()}); err != nil {
			t.Fatalf("RemoveSecurityProfile: %v", err)
		}
	}
	if left := i.listProfiles(t); len(left) != 0 {
		t.Errorf("after Remove: %v", left)
	}
	if files := i.profileStoreFiles(); len(files) != 0 {
		t.Errorf("after Remove the store holds %v", files)
	}
}

// TestSecurityProfileAppliedOnItsBase: the pulled profile denies mkdir,
// its Localhost base denies rmdir: the container can do neither, and can
// write a file, which both allow. The profile is removed between create and
// start: the container keeps the filter it was created with. The pod's own
// OCI profile must be present too.
func TestSecurityProfileAppliedOnItsBase(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	i := newInstance(t, withRegistry())
	hostsFor(t, i, profileHost, srv.URL)
	i.pull(t, busybox)
	ref := pushProfile(t, srv, "minicri/nomkdir", "", denyMkdir) // artifactType, empty config
	if _, err := i.pullProfile(ref, nil); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(i.dir, "base.json")
	if err := os.WriteFile(base, []byte(denyRmdir), 0o644); err != nil {
		t.Fatal(err)
	}
	oci := &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_OCI, OciRef: ref,
		BaseProfile: &runtimeapi.SecurityProfileBase{Type: runtimeapi.SecurityProfileBase_Localhost, LocalhostRef: base}}
	pod := i.logPodConfig("oci-profile")
	pod.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{Seccomp: oci}}
	podID := i.runPod(t, pod)
	cfg := ctrConfig("oci", "mkdir /tmp/d 2>&1; echo mkdir=$?; rmdir /tmp/absent 2>&1; echo rmdir=$?; echo x > /tmp/f && echo write=$?")
	cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{Seccomp: oci}
	id := i.create(t, podID, pod, cfg)
	for _, p := range i.listProfiles(t) {
		if _, err := i.images().RemoveSecurityProfile(ctx(t), &runtimeapi.RemoveSecurityProfileRequest{Digest: p.GetDigest()}); err != nil {
			t.Fatal(err)
		}
	}
	i.startCtr(t, id)
	i.waitExited(t, id, 30*time.Second)
	var out strings.Builder
	for _, l := range readLog(t, filepath.Join(pod.LogDirectory, cfg.LogPath)) {
		out.WriteString(l.content + "\n")
	}
	got := out.String()
	for _, want := range []string{"mkdir=1", "rmdir=1", "write=0"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in the container's output:\n%s", want, got)
		}
	}
	if strings.Count(got, "Operation not permitted") != 2 {
		t.Errorf("want mkdir and rmdir refused with EPERM (the filters), not another error:\n%s", got)
	}
	// Removed: a new container (or pod) naming it fails, with no pull.
	srv.ResetCounters()
	cfg2 := ctrConfig("oci-again", "true")
	cfg2.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{Seccomp: oci}
	_, err := i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg2, SandboxConfig: pod})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "not present") {
		t.Errorf("create with a removed profile: %v, want FailedPrecondition, not present", err)
	}
	pod2 := i.logPodConfig("oci-profile-gone")
	pod2.Linux = pod.Linux
	if _, err := i.rt.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: pod2}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("pod with a removed profile: %v, want FailedPrecondition", err)
	}
	if reqs := srv.Requests(); len(reqs) != 0 {
		t.Errorf("a create asked the registry: %v", reqs)
	}
}

// TestSecurityProfileHostileRefused: artifacts that hold no valid profile,
// and requests no pull can answer, are refused for good
// (SecurityProfileInvalid, InvalidArgument) and leave nothing in the store;
// an unreachable registry is RegistryUnavailable (Unavailable).
func TestSecurityProfileHostileRefused(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	i := newInstance(t, withRegistry())
	hostsFor(t, i, profileHost, srv.URL)
	good, goodBlobs := fixture.ProfileManifest(fixture.SeccompProfileConfigType, []byte(denyMkdir))
	pushRawProfile(t, srv, "minicri/inner", good, fixture.OCIManifestType, goodBlobs...)
	huge := `{"defaultAction":"SCMP_ACT_ALLOW","x":"` + strings.Repeat("a", 1<<20) + `"}`
	refs := map[string]string{
		"huge":           pushProfile(t, srv, "minicri/huge", fixture.SeccompProfileConfigType, huge),
		"not JSON":       pushProfile(t, srv, "minicri/notjson", fixture.SeccompProfileConfigType, "this is not JSON"),
		"unknown field":  pushProfile(t, srv, "minicri/field", fixture.SeccompProfileConfigType, `{"defaultAction":"SCMP_ACT_ALLOW","evil":1}`),
		"notify":         pushProfile(t, srv, "minicri/notify", fixture.SeccompProfileConfigType, `{"defaultAction":"SCMP_ACT_NOTIFY"}`),
		"listener":       pushProfile(t, srv, "minicri/listener", fixture.SeccompProfileConfigType, `{"defaultAction":"SCMP_ACT_ALLOW","listenerPath":"/run/agent.sock"}`),
		"wrong kind":     pushProfile(t, srv, "minicri/kind", "application/vnd.oci.image.config.v1+json", denyMkdir),
		"several layers": pushProfile(t, srv, "minicri/layers", fixture.SeccompProfileConfigType, denyMkdir, denyRmdir),
		"an index":       pushRawProfile(t, srv, "minicri/inner", fixture.IndexOf(good), fixture.OCIIndexType),
		"by tag":         profileHost + "/minicri/strict:v1",
	}
	for name, ref := range refs {
		_, err := i.pullProfile(ref, nil)
		if status.Code(err) != codes.InvalidArgument || !strings.HasPrefix(status.Convert(err).Message(), "SecurityProfileInvalid") {
			t.Errorf("%s: %v, want InvalidArgument, SecurityProfileInvalid", name, err)
		}
	}
	_, err := i.images().PullSecurityProfile(ctx(t), &runtimeapi.PullSecurityProfileRequest{Image: &runtimeapi.ImageSpec{Image: refs["huge"]}})
	if !strings.HasPrefix(status.Convert(err).Message(), "SecurityProfileInvalid") {
		t.Errorf("profile kind unspecified: %v", err)
	}
	if files := i.profileStoreFiles(); len(files) != 0 {
		t.Errorf("refused pulls left %v", files)
	}
	if l := i.listProfiles(t); len(l) != 0 {
		t.Errorf("refused pulls listed %v", l)
	}
	srv.SetIntercept(func(w http.ResponseWriter, _ *http.Request) bool {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return true
	})
	good2 := pushProfile(t, srv, "minicri/good", fixture.SeccompProfileConfigType, denyRmdir)
	_, err = i.pullProfile(good2, nil)
	if status.Code(err) != codes.Unavailable || !strings.HasPrefix(status.Convert(err).Message(), "RegistryUnavailable") {
		t.Errorf("registry down: %v, want Unavailable, RegistryUnavailable", err)
	}
}

// TestSecurityProfileOnRuntimeDefault: with no base_profile the base is the
// runtime default (moby's profile, whose clone rule has conditions): the
// pulled profile's denial holds, and the shell still forks and runs a
// command, which both allow.
func TestSecurityProfileOnRuntimeDefault(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	i := newInstance(t, withRegistry())
	hostsFor(t, i, profileHost, srv.URL)
	i.pull(t, busybox)
	ref := pushProfile(t, srv, "minicri/nomkdir", fixture.SeccompProfileConfigType, denyMkdir)
	if _, err := i.pullProfile(ref, nil); err != nil {
		t.Fatal(err)
	}
	podID, pod := i.podWithLogs(t, "oci-default")
	cfg := ctrConfig("oci-default", "mkdir /tmp/d 2>&1; echo mkdir=$?; ls / >/dev/null; echo ls=$?")
	cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{Seccomp: &runtimeapi.SecurityProfile{
		ProfileType: runtimeapi.SecurityProfile_OCI, OciRef: ref}}
	id := i.run(t, podID, pod, cfg)
	if st := i.waitExited(t, id, 30*time.Second); st.GetExitCode() != 0 {
		t.Errorf("exit code %d", st.GetExitCode())
	}
	var got strings.Builder
	for _, l := range readLog(t, filepath.Join(pod.LogDirectory, cfg.LogPath)) {
		got.WriteString(l.content + "\n")
	}
	for _, want := range []string{"Operation not permitted", "mkdir=1", "ls=0"} {
		if !strings.Contains(got.String(), want) {
			t.Errorf("want %q in the container's output:\n%s", want, got.String())
		}
	}
}
