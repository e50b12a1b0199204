package container

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/image"
	"github.com/minicri/minicri/imagevolume"
)

// fakeImages pins images by ID, with the store's set semantics: one pin
// per (image, holder).
type fakeImages struct {
	images map[string]image.Image     // by reference
	pins   map[string]map[string]bool // image ID -> holders
}

func (f *fakeImages) Acquire(ref, holder string) (image.Image, error) {
	img, ok := f.images[ref]
	if !ok {
		return image.Image{}, image.ErrNotFound
	}
	if f.pins[img.ID] == nil {
		f.pins[img.ID] = map[string]bool{}
	}
	f.pins[img.ID][holder] = true
	return img, nil
}

func (f *fakeImages) Release(holder string) error {
	for _, hs := range f.pins {
		delete(hs, holder)
	}
	return nil
}

// layeredImage builds an image of two layers: the lower has etc/passwd
// and a symlink that points out of the image, the upper adds bin/sh.
func layeredImage(t *testing.T) (*fakeImages, string) {
	t.Helper()
	dir := t.TempDir()
	lower, upper := filepath.Join(dir, "l0"), filepath.Join(dir, "l1")
	for _, d := range []string{filepath.Join(lower, "etc"), filepath.Join(upper, "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(lower, "etc", "passwd"), "root:x:0:0::/root:/bin/sh\n")
	write(filepath.Join(upper, "bin", "sh"), "#!\n")
	if err := os.Symlink("/etc", filepath.Join(lower, "escape")); err != nil {
		t.Fatal(err)
	}
	f := &fakeImages{
		images: map[string]image.Image{"vol:1": {ID: "sha256:vol", Layers: []string{lower, upper}}},
		pins:   map[string]map[string]bool{},
	}
	return f, filepath.Join(dir, "imagevols")
}

func TestValidateImageMount(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Mount
		want string
	}{
		{"ok", Mount{ContainerPath: "/v", Image: "i", Readonly: true}, ""},
		{"ok sub path", Mount{ContainerPath: "/v", Image: "i", Readonly: true, ImageSubPath: "a/b"}, ""},
		{"read-write", Mount{ContainerPath: "/v", Image: "i"}, "must be read-only"},
		{"relative", Mount{ContainerPath: "v", Image: "i", Readonly: true}, "not absolute"},
		{"host path", Mount{ContainerPath: "/v", Image: "i", Readonly: true, HostPath: "/x"}, "host path"},
		{"absolute sub path", Mount{ContainerPath: "/v", Image: "i", Readonly: true, ImageSubPath: "/etc"}, "relative"},
		{"escaping sub path", Mount{ContainerPath: "/v", Image: "i", Readonly: true, ImageSubPath: "a/../../x"}, "relative"},
		{"shared", Mount{ContainerPath: "/v", Image: "i", Readonly: true, Propagation: PropagationBidirectional}, "private"},
		{"noexec", Mount{ContainerPath: "/v", Image: "i", Readonly: true, MountOptions: []string{"noexec"}}, ""},
		{"suid", Mount{ContainerPath: "/v", Image: "i", Readonly: true, MountOptions: []string{"suid"}}, "not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validateImageMount(&tc.m)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalid with %q", err, tc.want)
			}
		})
	}
}

func TestWithImageVolumesReplacesImageMountsInOrder(t *testing.T) {
	cri := []Mount{
		{ContainerPath: "/a", Image: "x", Readonly: true},
		{ContainerPath: "/h", HostPath: "/host"},
		{ContainerPath: "/b", Image: "y", Readonly: true, ImageSubPath: "etc", MountOptions: []string{"nodev", "noexec"}},
	}
	ims := []ImageMount{{ContainerPath: "/a", Source: "/s/0"}, {ContainerPath: "/b", Source: "/s/1/etc"}}
	got := withImageVolumes(cri, ims)
	want := []Mount{
		{ContainerPath: "/a", HostPath: "/s/0", Readonly: true, MountOptions: []string{"nosuid", "nodev"}},
		{ContainerPath: "/h", HostPath: "/host"},
		{ContainerPath: "/b", HostPath: "/s/1/etc", Readonly: true, MountOptions: []string{"nosuid", "nodev", "noexec"}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i].ContainerPath != want[i].ContainerPath || got[i].HostPath != want[i].HostPath ||
			got[i].Readonly != want[i].Readonly || got[i].Image != "" || !slices.Equal(got[i].MountOptions, want[i].MountOptions) {
			t.Fatalf("mount %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func needRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

func TestAcquireImageVolumesMountsReadOnlyOverlay(t *testing.T) {
	needRoot(t)
	images, dir := layeredImage(t)
	cri := []Mount{
		{ContainerPath: "/whole", Image: "vol:1", Readonly: true},
		{ContainerPath: "/etc-only", Image: "vol:1", Readonly: true, ImageSubPath: "etc"},
	}
	ims, err := acquireImageVolumes(images, "c1/imagevols", cri, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { imagevolume.Release(images, "c1/imagevols", dir) })
	if len(images.pins["sha256:vol"]) != 1 || len(ims) != 2 {
		t.Fatalf("pins = %v, mounts = %+v", images.pins, ims)
	}
	for _, p := range []string{filepath.Join(ims[0].Source, "bin", "sh"), filepath.Join(ims[0].Source, "etc", "passwd"), filepath.Join(ims[1].Source, "passwd")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("image file not visible: %v", err)
		}
	}
	err = os.WriteFile(filepath.Join(ims[0].Source, "new"), nil, 0o644)
	if !errors.Is(err, unix.EROFS) {
		t.Fatalf("write to image volume: %v, want EROFS", err)
	}
	if ims[0].ImageID != "sha256:vol" || ims[0].Image != "vol:1" || ims[1].SubPath != "etc" {
		t.Fatalf("recorded %+v", ims)
	}

	if err := imagevolume.Release(images, "c1/imagevols", dir); err != nil {
		t.Fatal(err)
	}
	if len(images.pins["sha256:vol"]) != 0 {
		t.Fatalf("pins after release = %v", images.pins)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("image volumes dir left: %v", err)
	}
}

func TestAcquireImageVolumesMissingSubPathReturnsWhatToRelease(t *testing.T) {
	needRoot(t)
	images, dir := layeredImage(t)
	cri := []Mount{
		{ContainerPath: "/ok", Image: "vol:1", Readonly: true},
		{ContainerPath: "/bad", Image: "vol:1", Readonly: true, ImageSubPath: "not-there"},
	}
	ims, err := acquireImageVolumes(images, "c1/imagevols", cri, dir, "")
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	if len(ims) != 2 || len(images.pins["sha256:vol"]) != 1 {
		t.Fatalf("partial = %+v, pins = %v", ims, images.pins)
	}
	if err := imagevolume.Release(images, "c1/imagevols", dir); err != nil {
		t.Fatal(err)
	}
	if len(images.pins["sha256:vol"]) != 0 {
		t.Fatalf("pins after release = %v", images.pins)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("image volumes dir left: %v", err)
	}
}

func TestAcquireImageVolumesRejectsBeforePinning(t *testing.T) {
	images, dir := layeredImage(t)
	cri := []Mount{
		{ContainerPath: "/ok", Image: "vol:1", Readonly: true},
		{ContainerPath: "/rw", Image: "vol:1"},
	}
	if _, err := acquireImageVolumes(images, "c1/imagevols", cri, dir, ""); !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	if len(images.pins["sha256:vol"]) != 0 {
		t.Fatalf("pinned %v", images.pins)
	}
	if _, err := acquireImageVolumes(images, "c1/imagevols", []Mount{{ContainerPath: "/x", Image: "nope", Readonly: true}}, dir, ""); !errors.Is(err, image.ErrNotFound) {
		t.Fatalf("unknown image: %v", err)
	}
}

func TestUnmountImageVolumesIsIdempotent(t *testing.T) {
	needRoot(t)
	images, dir := layeredImage(t)
	ims, err := acquireImageVolumes(images, "c1/imagevols", []Mount{{ContainerPath: "/v", Image: "vol:1", Readonly: true}}, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := imagevolume.Unmount(dir); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(b), dir) {
		t.Fatal("an image volume is still mounted")
	}
	_ = ims
}
