package container

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/cdi"
)

// fakeCDI records what it is asked and fails as told.
type fakeCDI struct {
	asked []string
	err   error
}

func (f *fakeCDI) Inject(s *specs.Spec, names []string) error {
	f.asked = names
	if f.err != nil {
		return f.err
	}
	s.Process.Env = append(s.Process.Env, "INJECTED=1")
	return nil
}

func (f *fakeCDI) Close() error { return nil }

func TestInjectCDI(t *testing.T) {
	cfg := &Config{
		CDIDevices:  []string{"a.com/x=1"},
		Annotations: map[string]string{"cdi.k8s.io/p": "b.com/y=2", "other": "x"},
	}
	f := &fakeCDI{}
	m := &Manager{opts: Options{CDI: f}}
	s := &specs.Spec{Process: &specs.Process{}}
	if err := m.injectCDI(s, cfg); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.asked, []string{"a.com/x=1", "b.com/y=2"}) || !slices.Contains(s.Process.Env, "INJECTED=1") {
		t.Errorf("asked %v, env %v", f.asked, s.Process.Env)
	}

	// Nothing asked: CDI is not consulted, even when disabled.
	if err := (&Manager{}).injectCDI(s, &Config{Annotations: map[string]string{"x": "y"}}); err != nil {
		t.Errorf("no device, CDI disabled: %v", err)
	}
	for name, tc := range map[string]struct {
		m    *Manager
		cfg  *Config
		want error
	}{
		"malformed":  {m, &Config{CDIDevices: []string{"gpu0"}}, ErrInvalid},
		"annotation": {m, &Config{Annotations: map[string]string{"cdi.k8s.io/x": "gpu0"}}, ErrInvalid},
		"disabled":   {&Manager{}, cfg, ErrFailedPrecondition},
		"unknown":    {&Manager{opts: Options{CDI: &fakeCDI{err: fmt.Errorf("%w a.com/x=1", cdi.ErrUnknownDevice)}}}, cfg, ErrFailedPrecondition},
		"bad spec":   {&Manager{opts: Options{CDI: &fakeCDI{err: fmt.Errorf("%w x", cdi.ErrBadSpec)}}}, cfg, ErrFailedPrecondition},
	} {
		err := tc.m.injectCDI(&specs.Spec{Process: &specs.Process{}}, tc.cfg)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", name, err, tc.want)
		}
	}
}
