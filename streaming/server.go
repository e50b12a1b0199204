// Package streaming serves the CRI streaming endpoints (Exec, Attach,
// PortForward) over SPDY and WebSocket with k8s.io/cri-streaming. It adapts
// the library's Runtime to the container manager (exec, attach through the
// pod's monitor) and to the pods' network namespaces (port forwarding).
package streaming

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
)

// Config configures the streaming server.
type Config struct {
	Address     string // IP to listen on
	Port        string // "0": any free port
	TLSCert     string // serve HTTPS with this certificate and key when both are set
	TLSKey      string
	IdleTimeout time.Duration
}

// Server is the running streaming server.
type Server struct {
	lib  streaming.Server
	rt   *runtime
	reqs *requests
	idle time.Duration
	http *http.Server
	ln   *trackingListener
	url  string
	log  *slog.Logger
	errc chan error
}

// New listens on the configured address and prepares the server; Start
// serves.
func New(cfg Config, containers Containers, pods Pods, log *slog.Logger) (*Server, error) {
	tlsCfg, err := loadTLS(cfg)
	if err != nil {
		return nil, err
	}
	raw, err := net.Listen("tcp", net.JoinHostPort(cfg.Address, cfg.Port))
	if err != nil {
		return nil, fmt.Errorf("streaming server: listen: %w", err)
	}
	base := &url.URL{Scheme: "http", Host: advertised(raw.Addr().(*net.TCPAddr))}
	if tlsCfg != nil {
		base.Scheme = "https"
	}
	libCfg := streaming.DefaultConfig
	libCfg.Addr, libCfg.BaseURL, libCfg.TLSConfig = raw.Addr().String(), base, tlsCfg
	if cfg.IdleTimeout > 0 {
		libCfg.StreamIdleTimeout = cfg.IdleTimeout
	}
	rt := &runtime{containers: containers, pods: pods, log: log}
	lib, err := streaming.NewServer(libCfg, rt)
	if err != nil {
		raw.Close()
		return nil, fmt.Errorf("streaming server: %w", err)
	}
	ln := newTrackingListener(raw)
	s := &Server{lib: lib, rt: rt, reqs: &requests{m: map[string]pending{}}, idle: libCfg.StreamIdleTimeout,
		ln: ln, url: base.String(), log: log, errc: make(chan error, 1)}
	s.http = &http.Server{Handler: s, ConnContext: connContext, ReadHeaderTimeout: 30 * time.Second, TLSConfig: tlsCfg}
	return s, nil
}

func loadTLS(cfg Config) (*tls.Config, error) {
	if cfg.TLSCert == "" && cfg.TLSKey == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("streaming server: load TLS key pair: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// advertised is the host:port put in URLs: an unspecified listen address
// is advertised as the host's first global unicast address.
func advertised(a *net.TCPAddr) string {
	ip := a.IP
	if ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, ad := range addrs {
				if n, ok := ad.(*net.IPNet); ok && n.IP.IsGlobalUnicast() && n.IP.To4() != nil {
					ip = n.IP
					break
				}
			}
		}
	}
	return net.JoinHostPort(ip.String(), fmt.Sprint(a.Port))
}

// URL is the base URL of the server.
func (s *Server) URL() string { return s.url }

// Start serves in the background.
func (s *Server) Start() {
	go func() {
		var ln net.Listener = s.ln
		if s.http.TLSConfig != nil {
			ln = tls.NewListener(ln, s.http.TLSConfig)
		}
		err := s.http.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.errc <- err
	}()
}

// Stop closes the listener and every connection, upgraded ones included:
// their sessions end (execs are killed, attaches detach).
func (s *Server) Stop() error {
	err := s.http.Close()
	s.ln.closeAll()
	if serr := <-s.errc; serr != nil {
		err = errors.Join(err, fmt.Errorf("streaming server: %w", serr))
	}
	return err
}

// GetExec returns the URL of an exec session.
func (s *Server) GetExec(req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	resp, err := s.lib.GetExec(req)
	if err != nil {
		return nil, err
	}
	resp.Url, err = s.reqs.put(resp.Url, req)
	return resp, err
}

// GetAttach returns the URL of an attach session.
func (s *Server) GetAttach(req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	resp, err := s.lib.GetAttach(req)
	if err != nil {
		return nil, err
	}
	resp.Url, err = s.reqs.put(resp.Url, req)
	return resp, err
}

// GetPortForward returns the URL of a port-forward session.
func (s *Server) GetPortForward(req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	resp, err := s.lib.GetPortForward(req)
	if err != nil {
		return nil, err
	}
	resp.Url, err = s.reqs.put(resp.Url, req)
	return resp, err
}

// isTimeout tells the deadline errors net/http provokes on purpose (to
// stop its background read when a handler hijacks the connection) from a
// client that went away.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
