package image

import (
	"errors"
	"testing"

	"github.com/minicri/minicri/test/registry/fixture"
)

// The attack of issue 11 item 5: an image in use is removed (crictl rmi),
// then the daemon restarts. The containers re-acquire their image by ID
// during recovery; the layers their overlays use must survive the GC that
// ends the recovery, and go only when the last of them is released.
func TestRemovedInUseImageSurvivesRestart(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	ti := makeImage(t, "inuse", "inuse")
	push(t, srv, "lease/app:1", ti.img)
	root := t.TempDir()
	s := newStore(t, root, "")
	img, err := s.Pull(ctxT(t), srv.Host+"/lease/app:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(img.ID, "ctr-a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(srv.Host + "/lease/app:1"); err != nil {
		t.Fatal(err)
	}

	// Restart: a new store on the same root; the container comes back.
	s = newStore(t, root, "")
	if _, err := s.Status(img.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("removed image listed again after restart: %v", err)
	}
	if imgs, _ := s.List(""); len(imgs) != 0 {
		t.Errorf("List after restart: %d images", len(imgs))
	}
	// GC before the containers are back must not take the layers either.
	if err := s.GC(); err != nil {
		t.Fatal(err)
	}
	got, err := s.Acquire(img.ID, "ctr-a")
	if err != nil {
		t.Fatalf("recovered container cannot re-acquire its removed image: %v", err)
	}
	if len(got.Layers) != len(img.Layers) {
		t.Fatalf("re-acquired layers %v, want %v", got.Layers, img.Layers)
	}
	if err := s.FinishRecovery(); err != nil {
		t.Fatal(err)
	}
	for _, l := range img.Layers {
		if !exists(l) {
			t.Errorf("layer %s of a running container removed after restart", l)
		}
	}
	// Once recovered, a removed image is not found by ID for new users.
	if _, err := s.Acquire(img.ID, "ctr-new"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Acquire of a removed image after recovery: %v", err)
	}
	// A second restart keeps the tombstone while the container lives.
	s = newStore(t, root, "")
	if _, err := s.Acquire(img.ID, "ctr-a"); err != nil {
		t.Fatalf("second restart: %v", err)
	}
	if err := s.FinishRecovery(); err != nil {
		t.Fatal(err)
	}
	// The container goes: so do the layers and the tombstone.
	if err := s.Release("ctr-a"); err != nil {
		t.Fatal(err)
	}
	assertEmptyStore(t, s)
}

// A tombstone that no recovered container claims is collected with its
// layers when recovery ends; a re-pull of the image turns it back into a
// plain record.
func TestUnclaimedTombstoneIsCollected(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	ti := makeImage(t, "tomb", "tomb")
	push(t, srv, "lease/tomb:1", ti.img)
	root := t.TempDir()
	s := newStore(t, root, "")
	img, err := s.Pull(ctxT(t), srv.Host+"/lease/tomb:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(img.ID, "ctr-a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(img.ID); err != nil {
		t.Fatal(err)
	}
	// Pulled again while still in use: a normal image again.
	if _, err := s.Pull(ctxT(t), srv.Host+"/lease/tomb:1", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Release("ctr-a"); err != nil {
		t.Fatal(err)
	}
	s = newStore(t, root, "")
	if err := s.FinishRecovery(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Status(srv.Host + "/lease/tomb:1"); err != nil {
		t.Fatalf("re-pulled image lost: %v", err)
	}
	// Removed in use, then a restart where nobody claims it.
	if _, err := s.Acquire(img.ID, "ctr-a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(img.ID); err != nil {
		t.Fatal(err)
	}
	s = newStore(t, root, "")
	if err := s.FinishRecovery(); err != nil {
		t.Fatal(err)
	}
	assertEmptyStore(t, s)
}

// The attack of review item 3: a holder that releases what it does not hold
// (a creation that crashed before the restart, cleaned up by recovery; a
// RemoveContainer that failed after its Release and is retried) must not
// take another container's lease: the layers of a removed image stay while
// a running container uses them.
func TestReleaseByAnotherHolderKeepsTheLayers(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	ti := makeImage(t, "shared", "shared")
	push(t, srv, "lease/shared:1", ti.img)
	root := t.TempDir()
	s := newStore(t, root, "")
	img, err := s.Pull(ctxT(t), srv.Host+"/lease/shared:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"running", "crashed"} {
		if _, err := s.Acquire(img.ID, h); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Remove(img.ID); err != nil {
		t.Fatal(err)
	}
	assertLayers := func(when string) {
		t.Helper()
		for _, l := range img.Layers {
			if !exists(l) {
				t.Fatalf("%s: layer %s of the running container removed", when, l)
			}
		}
	}
	// The retried removal: the same holder releases twice.
	if err := s.Release("crashed"); err != nil {
		t.Fatal(err)
	}
	if err := s.Release("crashed"); err != nil {
		t.Fatal(err)
	}
	assertLayers("after a double release")

	// Restart: the running container is recovered first and acquires
	// again; then a record left "creating" by the crash is cleaned up,
	// releasing what this run never gave it, twice (a failed cleanup is
	// retried).
	s = newStore(t, root, "")
	if _, err := s.Acquire(img.ID, "running"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Release("crashed"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FinishRecovery(); err != nil {
		t.Fatal(err)
	}
	assertLayers("after recovery")
	if err := s.GC(); err != nil {
		t.Fatal(err)
	}
	assertLayers("after GC")
	// Once recovered, the tombstone is not found again; the last user
	// takes it with the layers.
	if _, err := s.Acquire(img.ID, "other"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("removed image found by ID after recovery: %v", err)
	}
	if err := s.Release("running"); err != nil {
		t.Fatal(err)
	}
	assertEmptyStore(t, s)
}

// Acquire is idempotent per holder; a holder may hold several images and
// Release drops them all.
func TestLeaseSetSemantics(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	a, b := makeImage(t, "la", "la"), makeImage(t, "lb", "lb")
	push(t, srv, "lease/a:1", a.img)
	push(t, srv, "lease/b:1", b.img)
	s := newStore(t, "", "")
	ia, err := s.Pull(ctxT(t), srv.Host+"/lease/a:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	ib, err := s.Pull(ctxT(t), srv.Host+"/lease/b:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{ia.ID, ia.ID, ib.ID} {
		if _, err := s.Acquire(ref, "vols"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Acquire(ia.ID, ""); err == nil {
		t.Error("a lease without a holder was taken")
	}
	for _, ref := range []string{ia.ID, ib.ID} {
		if err := s.Remove(ref); err != nil {
			t.Fatal(err)
		}
	}
	if !exists(ia.Layers[0]) || !exists(ib.Layers[0]) {
		t.Fatal("leased layers removed")
	}
	if err := s.Release("vols"); err != nil {
		t.Fatal(err)
	}
	assertEmptyStore(t, s)
}
