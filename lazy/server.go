package lazy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/moby/sys/mountinfo"
	digest "github.com/opencontainers/go-digest"
)

// requestTimeout bounds the reading of a request.
const requestTimeout = 10 * time.Second

// Server serves layers for its clients (the daemon) from one process.
type Server struct {
	log *slog.Logger
	// NewBlob makes the reader of a layer's source (HTTP range requests
	// unless a test says otherwise).
	NewBlob func(Source) (BlobReader, error)

	mu     sync.Mutex
	mounts map[string]*served // by mount point; nil m while mounting
	conns  sync.WaitGroup
}

type served struct {
	spec MountSpec
	m    *Mounted
}

// NewServer makes a server that logs to log.
func NewServer(log *slog.Logger) *Server {
	return &Server{log: log, NewBlob: httpSource, mounts: map[string]*served{}}
}

// Serve listens on socket (mode 0600) until ctx is done, then unmounts
// what it serves. It first lets go of the mounts a killed predecessor left
// dead (ENOTCONN).
func (s *Server) Serve(ctx context.Context, socket string) error {
	s.cleanStale()
	ln, err := listen(socket)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	s.log.Info("lazyfs: serving", "socket", socket, "pid", os.Getpid())
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("lazyfs: accept", "error", err)
			}
			break
		}
		s.conns.Add(1)
		go func() {
			defer s.conns.Done()
			s.handle(ctx, conn)
		}()
	}
	s.conns.Wait()
	s.unmountAll()
	return ctx.Err()
}

// listen binds the socket, replacing a file no server answers on.
func listen(socket string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(socket), 0o700); err != nil { //nolint:gosec // the socket is the operator's (a flag)
		return nil, fmt.Errorf("lazyfs: %w", err)
	}
	if c, err := net.Dial("unix", socket); err == nil { //nolint:gosec // see above
		_ = c.Close()
		return nil, fmt.Errorf("lazyfs: a server already listens on %s", socket)
	}
	_ = os.Remove(socket) //nolint:gosec // see above
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("lazyfs: %w", err)
	}
	if err := os.Chmod(socket, 0o600); err != nil { //nolint:gosec // see above
		_ = ln.Close()
		return nil, fmt.Errorf("lazyfs: %w", err)
	}
	return ln, nil
}

func (s *Server) handle(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	var req request
	_ = conn.SetReadDeadline(time.Now().Add(requestTimeout))
	if err := json.NewDecoder(conn).Decode(&req); err != nil {
		s.log.Warn("lazyfs: bad request", "error", err)
		return
	}
	resp := response{PID: os.Getpid()}
	var err error
	switch req.Op {
	case "mount":
		if req.Mount == nil {
			err = errors.New("mount without a spec")
		} else {
			err = s.mount(ctx, *req.Mount)
		}
	case "unmount":
		err = s.unmount(req.Mountpoint, req.Detach)
	case "list":
		resp.Mounts = s.list()
	case "source":
		if req.Mount == nil {
			err = errors.New("source without a spec")
		} else {
			err = s.setSource(req.Mountpoint, req.Mount.Source)
		}
	default:
		err = fmt.Errorf("unknown op %q", req.Op)
	}
	if err != nil {
		resp.Error = err.Error()
	}
	_ = json.NewEncoder(conn).Encode(resp)
}

// mount serves a layer at spec.Mountpoint: the same layer there already is
// no error, another one is.
func (s *Server) mount(ctx context.Context, spec MountSpec) error {
	if already, err := s.reserve(spec); err != nil || already {
		return err
	}
	m, err := s.open(ctx, spec)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		delete(s.mounts, spec.Mountpoint)
		s.log.Error("lazyfs: mount failed", "mountpoint", spec.Mountpoint, "toc", spec.TOCDigest, "error", err)
		return err
	}
	s.mounts[spec.Mountpoint].m = m
	s.log.Info("lazyfs: mounted", "mountpoint", spec.Mountpoint, "toc", spec.TOCDigest,
		"fetched", m.Layer.Fetched(), "total", m.Layer.Total())
	return nil
}

// reserve claims the mount point for spec, or says it already serves the
// same layer (nothing to do).
func (s *Server) reserve(spec MountSpec) (already bool, err error) {
	if !filepath.IsAbs(spec.Mountpoint) || !filepath.IsAbs(spec.Dir) {
		return false, fmt.Errorf("mount point %q and cache dir %q must be absolute", spec.Mountpoint, spec.Dir)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.mounts[spec.Mountpoint]; ok {
		if old.m != nil && old.spec.TOCDigest == spec.TOCDigest && old.spec.Dir == spec.Dir {
			return true, nil
		}
		return false, fmt.Errorf("%s: %w", spec.Mountpoint, syscall.EBUSY)
	}
	s.mounts[spec.Mountpoint] = &served{spec: spec}
	return false, nil
}

// open opens the layer and mounts it, its prefetch started.
func (s *Server) open(ctx context.Context, spec MountSpec) (*Mounted, error) {
	blob, err := s.NewBlob(spec.Source)
	if err != nil {
		return nil, err
	}
	if hb, ok := blob.(*HTTPBlob); ok && hb.Stall == 0 {
		// The background fetch has no deadline: a request the registry
		// never answers is given up as a read's would be, and asked again.
		hb.Stall = DefaultFetchTimeout
		if spec.FetchTimeout > 0 {
			hb.Stall = spec.FetchTimeout
		}
	}
	opts := Options{Dir: spec.Dir, TOCDigest: digest.Digest(spec.TOCDigest), FetchTimeout: spec.FetchTimeout,
		Tail: spec.Tail, Log: s.log.With("mountpoint", spec.Mountpoint)}
	l, err := Open(ctx, blob, opts)
	if err != nil {
		return nil, err
	}
	if spec.Prefetch {
		l.StartPrefetch() // claims the prioritized files before they can be read
	}
	m, err := Mount(spec.Mountpoint, l, false)
	if err != nil {
		return nil, errors.Join(err, l.Close())
	}
	if spec.Background {
		l.Background()
	}
	return m, nil
}

// setSource points the layer served at mountpoint at a fresh source (same
// blob: its size must be the same).
func (s *Server) setSource(mountpoint string, src Source) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv, ok := s.mounts[mountpoint]
	if !ok || sv.m == nil {
		return fmt.Errorf("%s: %s", mountpoint, notServed)
	}
	hb, ok := sv.m.Layer.blob.(interface{ SetSource(string, http.Header) })
	if !ok || src.Size != sv.spec.Source.Size || src.CAFile != sv.spec.Source.CAFile {
		return fmt.Errorf("%s: its source cannot be changed to that one", mountpoint)
	}
	hb.SetSource(src.URL, src.Header)
	sv.spec.Source = src
	s.log.Info("lazyfs: source renewed", "mountpoint", mountpoint, "url", src.URL)
	return nil
}

// notServed ends the error of an unmount of what the server does not serve.
const notServed = "not served"

// unmount stops serving mountpoint; detach lets go at once and closes the
// layer once the kernel has (a busy mount point fails without it).
func (s *Server) unmount(mountpoint string, detach bool) error {
	s.mu.Lock()
	sv, ok := s.mounts[mountpoint]
	if !ok || sv.m == nil {
		s.mu.Unlock()
		return fmt.Errorf("%s: %s", mountpoint, notServed)
	}
	delete(s.mounts, mountpoint)
	s.mu.Unlock()
	if err := s.release(sv.m, detach); err != nil {
		s.mu.Lock()
		s.mounts[mountpoint] = sv
		s.mu.Unlock()
		return err
	}
	s.log.Info("lazyfs: unmounted", "mountpoint", mountpoint, "detach", detach)
	return nil
}

func (s *Server) release(m *Mounted, detach bool) error {
	if !detach {
		if err := m.Unmount(); err != nil {
			return err
		}
		return m.Layer.Close()
	}
	done, err := m.Detach()
	if err != nil {
		return err
	}
	go func() {
		<-done
		if err := m.Layer.Close(); err != nil {
			s.log.Warn("lazyfs: close layer", "mountpoint", m.Mountpoint, "error", err)
		}
	}()
	return nil
}

func (s *Server) list() []MountStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []MountStatus{}
	for mp, sv := range s.mounts {
		if sv.m == nil {
			continue
		}
		l := sv.m.Layer
		st := MountStatus{Mountpoint: mp, Dir: sv.spec.Dir, TOCDigest: sv.spec.TOCDigest, URL: sv.spec.Source.URL,
			Fetched: l.Fetched(), Total: l.Total(), Complete: l.Complete()}
		if d, ok := l.blob.(interface{ Denied() bool }); ok {
			st.Denied = d.Denied()
		}
		out = append(out, st)
	}
	return out
}

// unmountAll lets go of every mount as the server stops: unmounted when it
// can be, else detached (its readers then see ENOTCONN).
func (s *Server) unmountAll() {
	s.mu.Lock()
	all := s.mounts
	s.mounts = map[string]*served{}
	s.mu.Unlock()
	for mp, sv := range all {
		if sv.m == nil {
			continue
		}
		if err := sv.m.Unmount(); err != nil {
			s.log.Warn("lazyfs: busy at exit, detached", "mountpoint", mp, "error", err)
			_ = syscall.Unmount(mp, syscall.MNT_DETACH)
			continue
		}
		_ = sv.m.Layer.Close()
	}
}

// cleanStale detaches this filesystem's mounts that no server serves any
// more (a predecessor's, killed): they only answer ENOTCONN.
func (s *Server) cleanStale() {
	mounts, err := mountinfo.GetMounts(mountinfo.FSTypeFilter(FSType))
	if err != nil {
		s.log.Warn("lazyfs: mountinfo", "error", err)
		return
	}
	for _, m := range mounts {
		var st syscall.Statfs_t // statfs always asks the server; stat may be answered from the kernel's cache
		if err := syscall.Statfs(m.Mountpoint, &st); !errors.Is(err, syscall.ENOTCONN) {
			continue
		}
		err := syscall.Unmount(m.Mountpoint, syscall.MNT_DETACH)
		s.log.Info("lazyfs: detached a dead mount", "mountpoint", m.Mountpoint, "error", err)
	}
}

// httpSource reads a source by HTTP range requests, with its own client
// (trusting CAFile's roots when given).
func httpSource(src Source) (BlobReader, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if src.CAFile != "" {
		pem, err := os.ReadFile(src.CAFile)
		if err != nil {
			return nil, fmt.Errorf("lazyfs: CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("lazyfs: CA file %s: no certificate", src.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &HTTPBlob{URL: src.URL, Header: src.Header, Len: src.Size, Client: &http.Client{Transport: tr}}, nil
}
