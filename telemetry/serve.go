package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server serves /metrics.
type Server struct {
	srv  *http.Server
	addr net.Addr
	done chan struct{}
}

// Serve listens on address ("127.0.0.1:9090"; port 0: a free one, which
// the log line "metrics serving" gives) and serves m at /metrics.
func Serve(address string, m *Metrics, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w", address, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn), MaxRequestsInFlight: 4, Timeout: 30 * time.Second,
	}))
	s := &Server{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		addr: ln.Addr(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server failed", "err", err)
		}
	}()
	log.Info("metrics serving", "address", s.addr.String(), "path", "/metrics")
	return s, nil
}

// Addr is the address it listens on.
func (s *Server) Addr() net.Addr { return s.addr }

// Stop closes the listener and waits for scrapes in progress.
func (s *Server) Stop(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}
