package checkpoint

import (
	"strings"
	"testing"

	"github.com/checkpoint-restore/go-criu/v8/crit/images/creds"
	criucore "github.com/checkpoint-restore/go-criu/v8/crit/images/criu-core"
	"github.com/checkpoint-restore/go-criu/v8/crit/images/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/protobuf/proto"

	"github.com/minicri/minicri/internal/seccompbpf"
	"github.com/minicri/minicri/security"
)

// task is a thread core with the given IDs and permitted/effective caps.
func task(uid, gid uint32, caps uint32, groups ...uint32) *criucore.ThreadCoreEntry {
	return &criucore.ThreadCoreEntry{Creds: &creds.CredsEntry{
		Uid: proto.Uint32(uid), Euid: proto.Uint32(uid), Suid: proto.Uint32(uid), Fsuid: proto.Uint32(uid),
		Gid: proto.Uint32(gid), Egid: proto.Uint32(gid), Sgid: proto.Uint32(gid), Fsgid: proto.Uint32(gid),
		Groups: groups, CapPrm: []uint32{caps, 0}, CapEff: []uint32{caps, 0}, CapBnd: []uint32{caps, 0},
	}}
}

// TestCheckTaskCeilings: a non-root process keeps only its ambient
// capabilities and its IDs, whatever its bounding set (CAP_SETUID in it)
// and no_new_privs; root keeps its bounding set and may switch IDs.
func TestCheckTaskCeilings(t *testing.T) {
	def := security.DefaultCapabilities()
	setuid, _ := capMask([]string{"CAP_SETUID"})
	all, _ := capMask(def)
	proc := func(uid uint32, ambient ...string) *specs.Process {
		return &specs.Process{User: specs.User{UID: uid, GID: uid},
			Capabilities: &specs.LinuxCapabilities{Bounding: def, Permitted: def, Effective: def, Ambient: ambient, Inheritable: ambient}}
	}
	for name, c := range map[string]struct {
		p    *specs.Process
		tc   *criucore.ThreadCoreEntry
		want string // "" for accepted
	}{
		"root as root":                 {proc(0), task(0, 0, uint32(all)), ""},
		"root's task as uid 101":       {proc(0), task(101, 101, 0, 101), ""},
		"uid 1000 as itself":           {proc(1000), task(1000, 1000, 0, 1000), ""},
		"uid 1000 as root":             {proc(1000), task(0, 1000, 0, 1000), "runs as uid 0"},
		"uid 1000 with caps":           {proc(1000), task(1000, 1000, uint32(setuid), 1000), "permitted capabilities"},
		"uid 1000 with ambient setuid": {proc(1000, "CAP_SETUID"), task(0, 1000, uint32(setuid), 1000), ""},
		"uid 1000 in group 6":          {proc(1000), task(1000, 1000, 0, 1000, 6), "group 6"},
		"uid 1000 as gid 0":            {proc(1000), task(1000, 0, 0), "gid 0"},
	} {
		ceil, err := capCeilings(c.p)
		if err != nil {
			t.Fatal(err)
		}
		err = checkTask(c.tc, c.p, ceil)
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// TestCheckSeccompChains: a thread must hold exactly the request's chain
// (TSYNC aside), or share its leader's through TSYNC; nothing else.
func TestCheckSeccompChains(t *testing.T) {
	prog := []byte{0x06, 0, 0, 0, 0, 0, 0x05, 0} // ret ERRNO
	other := []byte{0x06, 0, 0, 0, 0, 0, 0xff, 0x7f}
	want := []seccompbpf.Filter{{Prog: prog}}
	filter := func(idx uint32) *criucore.CoreEntry {
		return &criucore.CoreEntry{ThreadCore: &criucore.ThreadCoreEntry{SeccompMode: criucore.SeccompMode_filter.Enum(), SeccompFilter: proto.Uint32(idx)}}
	}
	none := &criucore.CoreEntry{ThreadCore: &criucore.ThreadCoreEntry{}}
	for name, c := range map[string]struct {
		ts   ckptTasks
		tid  uint32
		want []seccompbpf.Filter
		ok   bool
	}{
		"the request's":         {ckptTasks{cores: map[uint32]*criucore.CoreEntry{2: filter(0)}, filters: []*seccomp.SeccompFilter{{Filter: prog}}}, 2, want, true},
		"another program":       {ckptTasks{cores: map[uint32]*criucore.CoreEntry{2: filter(0)}, filters: []*seccomp.SeccompFilter{{Filter: other}}}, 2, want, false},
		"with the LOG flag":     {ckptTasks{cores: map[uint32]*criucore.CoreEntry{2: filter(0)}, filters: []*seccomp.SeccompFilter{{Filter: prog, Flags: proto.Uint32(2)}}}, 2, want, false},
		"one more below":        {ckptTasks{cores: map[uint32]*criucore.CoreEntry{2: filter(1)}, filters: []*seccomp.SeccompFilter{{Filter: prog}, {Filter: prog, Prev: proto.Uint32(0)}}}, 2, want, false},
		"filter, none asked":    {ckptTasks{cores: map[uint32]*criucore.CoreEntry{2: filter(0)}, filters: []*seccomp.SeccompFilter{{Filter: prog}}}, 2, nil, false},
		"index out of range":    {ckptTasks{cores: map[uint32]*criucore.CoreEntry{2: filter(3)}, filters: []*seccomp.SeccompFilter{{Filter: prog}}}, 2, want, false},
		"no filter":             {ckptTasks{cores: map[uint32]*criucore.CoreEntry{2: none}}, 2, want, false},
		"no filter, none asked": {ckptTasks{cores: map[uint32]*criucore.CoreEntry{2: none}}, 2, nil, true},
		"thread, leader TSYNC": {ckptTasks{cores: map[uint32]*criucore.CoreEntry{2: filter(0), 3: none}, leader: map[uint32]uint32{2: 2, 3: 2},
			filters: []*seccomp.SeccompFilter{{Filter: prog, Flags: proto.Uint32(1)}}}, 3, want, true},
		"thread, leader no TSYNC": {ckptTasks{cores: map[uint32]*criucore.CoreEntry{2: filter(0), 3: none}, leader: map[uint32]uint32{2: 2, 3: 2},
			filters: []*seccomp.SeccompFilter{{Filter: prog}}}, 3, want, false},
		"leader without filter": {ckptTasks{cores: map[uint32]*criucore.CoreEntry{2: none}, leader: map[uint32]uint32{2: 2}}, 2, want, false},
	} {
		if err := c.ts.checkSeccomp(c.tid, c.want); (err == nil) != c.ok {
			t.Errorf("%s: %v, want accepted %v", name, err, c.ok)
		}
	}
}

// TestCheckLSM: the image's label must be the request's, none for none.
func TestCheckLSM(t *testing.T) {
	aa := &specs.Process{ApparmorProfile: "minicri-default"}
	for name, c := range map[string]struct {
		cr *creds.CredsEntry
		p  *specs.Process
		ok bool
	}{
		"none, none asked":      {&creds.CredsEntry{}, &specs.Process{}, true},
		"profile, none asked":   {&creds.CredsEntry{LsmProfile: proto.String("x")}, &specs.Process{}, false},
		"the request's":         {&creds.CredsEntry{LsmProfile: proto.String("minicri-default")}, aa, true},
		"another profile":       {&creds.CredsEntry{LsmProfile: proto.String("unconfined")}, aa, false},
		"unconfined, one asked": {&creds.CredsEntry{}, aa, false},
		"socket label":          {&creds.CredsEntry{LsmSockcreate: proto.String("s")}, &specs.Process{}, false},
	} {
		if err := checkLSM(c.cr, c.p); (err == nil) != c.ok {
			t.Errorf("%s: %v, want accepted %v", name, err, c.ok)
		}
	}
}
