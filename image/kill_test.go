package image

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minicri/minicri/test/registry/fixture"
)

// The kill helper: a child process that pulls and gets SIGKILLed.
func TestMain(m *testing.M) {
	if args := os.Getenv("MINICRI_IMAGE_PULL_HELPER"); args != "" {
		root, ref, _ := strings.Cut(args, "|")
		s, err := New(Config{Root: root, RegistryConfigPath: root + "/no-hosts"})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		_, err = s.Pull(context.Background(), ref, nil)
		fmt.Fprintln(os.Stderr, "helper pull returned:", err)
		os.Exit(3)
	}
	os.Exit(m.Run())
}

func TestKillMidPull(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	ti := makeImage(t, "kill", "kill")
	push(t, srv, "kill/app:1", ti.img)
	top := ti.layers[1]
	stalled := make(chan struct{}, 1)
	srv.SetIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, top.DigestString()) {
			w.Header().Set("Content-Length", fmt.Sprint(len(top.Blob)))
			_, _ = w.Write(top.Blob[:len(top.Blob)/2])
			w.(http.Flusher).Flush()
			stalled <- struct{}{}
			<-r.Context().Done()
			return true
		}
		return false
	})
	root := t.TempDir()
	ref := srv.Host + "/kill/app:1"
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MINICRI_IMAGE_PULL_HELPER="+root+"|"+ref)
	cmd.Stderr = testWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stalled:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("helper never reached the layer")
	}
	// Wait until the partial layer is on disk (layer blobs are not kept:
	// the unpacked directory is the only partial state), then kill.
	deadline := time.Now().Add(10 * time.Second)
	for {
		tmps, _ := filepath.Glob(filepath.Join(root, "layers", ".tmp-*"))
		if len(tmps) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no partial state: %v", tmps)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	srv.SetIntercept(nil)

	s := newStore(t, root, "")
	if n := listDir(t, s.tmpDir); len(n) != 0 {
		t.Errorf("temp blobs after restart: %v", n)
	}
	for _, n := range listDir(t, s.layDir) {
		if strings.HasPrefix(n, ".") {
			t.Errorf("partial layer after restart: %s", n)
		}
	}
	if _, err := s.Status(ref); err == nil {
		t.Error("killed pull left an image record")
	}
	img, err := s.Pull(ctxT(t), ref, nil)
	if err != nil || img.ID != ti.id {
		t.Fatalf("pull after kill: %v", err)
	}
	if readFile(t, filepath.Join(img.Layers[1], "app/kill")) != strings.Repeat("kill", 1000) {
		t.Error("content")
	}
}
