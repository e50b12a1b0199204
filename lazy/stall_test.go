package lazy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestHTTPBlobStall: a range request the registry accepts and never
// answers, or whose body stops, fails with ErrStalled after Stall, though
// its caller set no deadline (the background fetch); a body that keeps
// coming, however slowly, is not cut.
func TestHTTPBlobStall(t *testing.T) {
	const size, stall = 64, 300 * time.Millisecond
	for name, serve := range map[string]func(http.ResponseWriter, *http.Request){
		"no answer": func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
		"body stops": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes 0-%d/%d", size-1, size))
			w.WriteHeader(http.StatusPartialContent)
			_, _ = w.Write(make([]byte, size/2))
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
		},
		"slow body": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes 0-%d/%d", size-1, size))
			w.WriteHeader(http.StatusPartialContent)
			for range 8 { // 800 ms in all, a byte every 100 ms of it
				_, _ = w.Write(make([]byte, size/8))
				http.NewResponseController(w).Flush()
				time.Sleep(stall / 3)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(serve))
			defer srv.Close()
			b := &HTTPBlob{URL: srv.URL, Len: size, Stall: stall}
			defer b.CloseIdle()
			start := time.Now()
			_, err := b.ReadAt(context.Background(), make([]byte, size), 0)
			took := time.Since(start)
			if name == "slow body" {
				if err != nil {
					t.Fatalf("a slow body cut: %v after %v", err, took)
				}
				return
			}
			if !errors.Is(err, ErrStalled) || took < stall || took > stall+2*time.Second {
				t.Fatalf("%v after %v; want ErrStalled after %v", err, took, stall)
			}
		})
	}
}
