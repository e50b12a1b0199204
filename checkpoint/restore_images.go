package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/checkpoint-restore/go-criu/v8/crit"
	"github.com/checkpoint-restore/go-criu/v8/crit/images/apparmor"
	criucore "github.com/checkpoint-restore/go-criu/v8/crit/images/criu-core"
	"github.com/checkpoint-restore/go-criu/v8/crit/images/pstree"
	"github.com/checkpoint-restore/go-criu/v8/crit/images/seccomp"
	"google.golang.org/protobuf/proto"
)

// ckptTasks is what a checkpoint's CRIU images say of its tasks' security:
// each thread's core (core-<tid>.img), the thread group each thread is in
// (pstree.img), the seccomp filters (seccomp.img) and AppArmor policy
// (apparmor.img) CRIU would install.
type ckptTasks struct {
	cores    map[uint32]*criucore.CoreEntry
	leader   map[uint32]uint32 // thread id -> its task's pid
	filters  []*seccomp.SeccompFilter
	aaPolicy bool // apparmor.img holds a namespace
}

// readCkptTasks decodes the images a restore's security checks need.
func readCkptTasks(images string) (*ckptTasks, error) {
	ts := &ckptTasks{cores: map[uint32]*criucore.CoreEntry{}, leader: map[uint32]uint32{}}
	paths, err := filepath.Glob(filepath.Join(images, "core-*.img"))
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("%w: checkpoint holds no task (core-*.img)", ErrInvalid)
	}
	for _, path := range paths {
		tid, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "core-"), ".img"), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%w: checkpoint image %s: not a thread's core", ErrInvalid, filepath.Base(path))
		}
		ce, err := readCore(path)
		if err != nil {
			return nil, fmt.Errorf("%w: checkpoint image %s: %v", ErrInvalid, filepath.Base(path), err)
		}
		ts.cores[uint32(tid)] = ce
	}
	if err := ts.readPstree(filepath.Join(images, "pstree.img")); err != nil {
		return nil, err
	}
	if err := ts.readSeccomp(filepath.Join(images, "seccomp.img")); err != nil {
		return nil, err
	}
	if err := ts.readAppArmor(filepath.Join(images, "apparmor.img")); err != nil {
		return nil, err
	}
	return ts, nil
}

func (ts *ckptTasks) readPstree(path string) error {
	es, err := readEntries(path, &pstree.PstreeEntry{})
	if err != nil {
		return fmt.Errorf("%w: checkpoint image pstree.img: %v", ErrInvalid, err)
	}
	for _, e := range es {
		pe := e.(*pstree.PstreeEntry)
		for _, tid := range pe.GetThreads() {
			ts.leader[tid] = pe.GetPid()
		}
	}
	return nil
}

func (ts *ckptTasks) readSeccomp(path string) error {
	es, err := readEntries(path, &seccomp.SeccompEntry{})
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil || len(es) > 1 {
		return fmt.Errorf("%w: checkpoint image seccomp.img: %v (%d entries)", ErrInvalid, err, len(es))
	}
	for _, e := range es {
		ts.filters = e.(*seccomp.SeccompEntry).GetSeccompFilters()
	}
	return nil
}

func (ts *ckptTasks) readAppArmor(path string) error {
	es, err := readEntries(path, &apparmor.ApparmorEntry{})
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: checkpoint image apparmor.img: %v", ErrInvalid, err)
	}
	for _, e := range es {
		ts.aaPolicy = ts.aaPolicy || len(e.(*apparmor.ApparmorEntry).GetNamespaces()) > 0
	}
	return nil
}

// readCore decodes a core-<tid>.img: one entry, with a thread core.
func readCore(path string) (*criucore.CoreEntry, error) {
	es, err := readEntries(path, &criucore.CoreEntry{})
	if err != nil {
		return nil, err
	}
	if len(es) != 1 {
		return nil, fmt.Errorf("%d core entries", len(es))
	}
	ce := es[0].(*criucore.CoreEntry)
	if ce.GetThreadCore() == nil {
		return nil, fmt.Errorf("no thread core")
	}
	return ce, nil
}

// readEntries decodes the CRIU image at path, of entries of type typ.
func readEntries(path string, typ proto.Message) ([]proto.Message, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	img, err := crit.New(f, nil, "", false, true).Decode(typ)
	if err != nil {
		return nil, err
	}
	out := make([]proto.Message, 0, len(img.Entries))
	for _, e := range img.Entries {
		out = append(out, e.Message)
	}
	return out, nil
}
