package nri

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/minicri/minicri/hook"
)

type fakePods struct{}

func (fakePods) Pod(string) (hook.Pod, error) { return hook.Pod{}, nil }
func (fakePods) Pods() []hook.Pod             { return nil }

// With no plugin connected NRI is inert: the socket is there (root only),
// the hooks return at once and change nothing; Stop removes the socket.
func TestNoPluginIsInert(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "nri", "nri.sock")
	n, err := New(Options{SocketPath: sock, PluginPath: filepath.Join(dir, "plugins"), PluginConfigPath: filepath.Join(dir, "conf.d"),
		RegistrationTimeout: time.Second, RequestTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(fakePods{}, &fakeContainers{}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Dir(sock)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("socket dir: %v %v", fi, err)
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket: %v %v", fi, err)
	}
	if n.Active() {
		t.Fatal("active with no plugin")
	}
	spec, want := baseSpec(), baseSpec()
	release, err := n.CreateContainer(context.Background(), hook.Container{PodID: "p"}, spec)
	if err != nil || !reflect.DeepEqual(spec, want) {
		t.Fatalf("CreateContainer without plugins: %v, spec changed: %v", err, !reflect.DeepEqual(spec, want))
	}
	release()
	if release, err = n.RunPod(context.Background(), hook.Pod{}); err != nil {
		t.Fatal(err)
	}
	release()
	if err := n.StartContainer(context.Background(), hook.Container{}); err != nil {
		t.Fatal(err)
	}
	n.Stop()
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left after Stop: %v", err)
	}
}
