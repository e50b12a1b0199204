package sandbox

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestNormalizeSysctl(t *testing.T) {
	cases := map[string]string{
		"net.ipv4.ip_forward":              "net.ipv4.ip_forward",
		"net/ipv4/ip_forward":              "net.ipv4.ip_forward",
		"net/ipv4/conf/eno2.100/rp_filter": "net.ipv4.conf.eno2/100.rp_filter",
		"kernel.shm_rmid_forced":           "kernel.shm_rmid_forced",
	}
	for in, want := range cases {
		if got := normalizeSysctl(in); got != want {
			t.Errorf("normalizeSysctl(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := Config{Metadata: Metadata{Name: "n", Namespace: "ns", UID: "u"}}
	if err := validate(&ok); err != nil {
		t.Fatal(err)
	}
	bad := map[string]Config{
		"name":           {Metadata: Metadata{Namespace: "ns", UID: "u"}},
		"namespace":      {Metadata: Metadata{Name: "n", UID: "u"}},
		"uid":            {Metadata: Metadata{Name: "n", Namespace: "ns"}},
		"not namespaced": {Metadata: ok.Metadata, Sysctls: map[string]string{"vm.swappiness": "1"}},
		"net on host":    {Metadata: ok.Metadata, Sysctls: map[string]string{"net.ipv4.ip_forward": "1"}, Namespaces: Namespaces{Network: ModeNode}},
		"ipc on host":    {Metadata: ok.Metadata, Sysctls: map[string]string{"kernel.shmmax": "1"}, Namespaces: Namespaces{IPC: ModeNode}},
		"target net":     {Metadata: ok.Metadata, Namespaces: Namespaces{Network: ModeTarget}},
		"pod cgroupns":   {Metadata: ok.Metadata, Namespaces: Namespaces{CgroupNSSet: true}},
	}
	for name, cfg := range bad {
		if err := validate(&cfg); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v", name, err)
		}
	}
	withSlash := Config{Metadata: ok.Metadata, Sysctls: map[string]string{"net/ipv4/ip_forward": "1", "fs.mqueue.msg_max": "20"}}
	if err := validate(&withSlash); err != nil || withSlash.Sysctls["net.ipv4.ip_forward"] != "1" {
		t.Fatalf("slash form not normalised: %v %v", withSlash.Sysctls, err)
	}
}

func TestStateMachine(t *testing.T) {
	allowed := [][2]State{{StateCreating, StateReady}, {StateReady, StateNotReady}, {StateNotReady, StateRemoving}, {StateReady, StateReady}}
	for _, p := range allowed {
		if err := checkTransition(p[0], p[1]); err != nil {
			t.Errorf("%s -> %s refused: %v", p[0], p[1], err)
		}
	}
	refused := [][2]State{{StateCreating, StateNotReady}, {StateNotReady, StateReady}, {StateRemoving, StateReady}, {StateReady, StateRemoving}}
	for _, p := range refused {
		if err := checkTransition(p[0], p[1]); !errors.Is(err, ErrFailedPrecondition) {
			t.Errorf("%s -> %s allowed", p[0], p[1])
		}
	}
}

func TestResolvConf(t *testing.T) {
	got, err := resolvConf(&DNS{Servers: []string{"1.1.1.1", "8.8.8.8"}, Searches: []string{"a", "b"}, Options: []string{"ndots:2"}})
	if err != nil || string(got) != "nameserver 1.1.1.1\nnameserver 8.8.8.8\nsearch a b\noptions ndots:2\n" {
		t.Fatalf("got %q %v", got, err)
	}
}

func TestInflightSharesOneResult(t *testing.T) {
	f := newInflight()
	op, leader := f.begin("k")
	if !leader {
		t.Fatal("first caller must lead")
	}
	op2, leader2 := f.begin("k")
	if leader2 || op2 != op {
		t.Fatal("second caller must join the first")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := f.wait(ctx, "k", op); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait must give up with the caller's context: %v", err)
	}
	f.finish("k", op, "id1", nil)
	if id, err := f.wait(context.Background(), "k", op); id != "id1" || err != nil {
		t.Fatalf("late caller got %q %v", id, err)
	}
	if _, leader := f.begin("k"); !leader {
		t.Fatal("a claimed result must be forgotten")
	}
}

func TestInflightForgetsFailures(t *testing.T) {
	f := newInflight()
	op, _ := f.begin("k")
	f.finish("k", op, "", errors.New("boom"))
	if _, leader := f.begin("k"); !leader {
		t.Fatal("a failed operation must not be handed to the next caller")
	}
}
