package lazy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/containerd/stargz-snapshotter/estargz"
	"golang.org/x/sync/errgroup"
)

// Backoff between failed range requests.
const (
	firstBackoff = 50 * time.Millisecond
	maxBackoff   = 2 * time.Second
	// maxIdleBackoff is the longest pause of the background fetch while the
	// registry is away.
	maxIdleBackoff = 30 * time.Second
	// outageGrace is how long after a read gave up waiting for the registry
	// the next reads fail at once, until a range request succeeds again:
	// the kernel retries a failed readahead page by page, and each retry
	// would wait the whole fetch timeout again.
	outageGrace = time.Second
)

// ReadFile reads the regular file e's bytes at off into p, fetching the
// chunks not cached yet. It gives up after the fetch timeout with
// ErrUnavailable, and on a chunk that is not what the TOC says with ErrCorrupt.
func (l *Layer) ReadFile(ctx context.Context, e *estargz.TOCEntry, p []byte, off int64) (int, error) {
	if off >= e.Size || len(p) == 0 {
		return 0, nil
	}
	end := min(off+int64(len(p)), e.Size)
	idx := l.files[e]
	k := sort.Search(len(idx), func(k int) bool {
		c := l.chunks[idx[k]]
		return c.fileOff+c.size > off
	})
	ctx, cancel := context.WithTimeout(ctx, l.opts.FetchTimeout)
	defer cancel()
	n := 0
	for ; k < len(idx) && off < end; k++ {
		c := l.chunks[idx[k]]
		if err := l.ensure(ctx, c.stream); err != nil {
			return n, err
		}
		want := min(end, c.fileOff+c.size) - off
		m, err := l.data.ReadAt(p[n:n+int(want)], c.pos+off-c.fileOff)
		n += m
		if err != nil {
			return n, fmt.Errorf("lazy cache: read %q at %d: %w", e.Name, off, err)
		}
		off += want
	}
	return n, nil
}

// ensure returns when stream i is cached, fetching it if no one else is.
func (l *Layer) ensure(ctx context.Context, i int) error {
	if since := time.Since(time.Unix(0, l.outage.Load())); since < outageGrace && !l.haveStream(i) {
		return fmt.Errorf("%w: the registry did not answer %v ago", ErrUnavailable, since.Round(time.Millisecond))
	}
	for {
		ok, wait := l.claim(i)
		switch {
		case ok:
			err := l.fetchStream(ctx, i)
			l.release(i, err == nil)
			return err
		case wait == nil:
			return nil
		}
		select {
		case <-wait: // cached, or the other fetcher failed: look again
		case <-ctx.Done():
			return l.timeoutError(ctx, i, nil)
		}
	}
}

// fetchStream fetches and stores stream i, retrying the registry until ctx
// is done; a corrupt stream fails at once.
func (l *Layer) fetchStream(ctx context.Context, i int) error {
	s := l.streams[i]
	buf := make([]byte, s.end-s.off)
	if err := l.readRange(ctx, buf, s.off, firstBackoff, maxBackoff); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) { // not a reader interrupted, nor a close
			l.outage.Store(time.Now().UnixNano())
		}
		return l.timeoutError(ctx, i, err)
	}
	if err := l.store(i, buf); err != nil {
		l.log.Error("lazy: chunk not stored", "error", err)
		return err
	}
	return nil
}

func (l *Layer) timeoutError(ctx context.Context, i int, last error) error {
	s := l.streams[i]
	return fmt.Errorf("%w: bytes [%d, %d) not fetched in %v: %w (last: %v)",
		ErrUnavailable, s.off, s.end, l.opts.FetchTimeout, context.Cause(ctx), last)
}

// readRange fills buf from the blob at off, retrying failures with backoff
// from first to most until ctx is done or the layer closes.
func (l *Layer) readRange(ctx context.Context, buf []byte, off int64, first, most time.Duration) error {
	delay := first
	for {
		_, err := l.blob.ReadAt(ctx, buf, off)
		if err == nil || errors.Is(err, io.EOF) && off+int64(len(buf)) == l.blob.Size() {
			l.outage.Store(0)
			return nil
		}
		if delay == most {
			l.log.Warn("lazy: registry still failing", "offset", off, "bytes", len(buf), "retry", most, "error", err)
		} else {
			l.log.Debug("lazy: range read failed", "offset", off, "bytes", len(buf), "error", err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-l.closed:
			t.Stop()
			return fmt.Errorf("%w (%v)", ErrClosed, err)
		case <-t.C:
		}
		delay = min(2*delay, most)
	}
}

// Prefetch fetches the prioritized files: the streams before the
// .prefetch.landmark entry (none when the layer has .no.prefetch.landmark or
// no landmark). It returns when they are cached, or ctx is done.
func (l *Layer) Prefetch(ctx context.Context) error {
	spans := l.claimSpans(l.prioritized(), l.prefetchSpan())
	end := prio.begin()
	defer end()
	return l.fetchClaimed(ctx, spans)
}

// StartPrefetch is Prefetch in the background, within the fetch timeout:
// it claims the prioritized streams before it returns, so a read of them
// waits for this fetch rather than asking the registry itself, and a
// background fetch (Background) waits for it to end.
func (l *Layer) StartPrefetch() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.isClosed {
		return
	}
	ids := l.prioritizedLocked()
	if len(ids) == 0 {
		return
	}
	spans := l.claimSpansLocked(ids, l.prefetchSpan())
	end := prio.begin()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer end()
		ctx, cancel := context.WithTimeout(context.Background(), l.opts.FetchTimeout)
		defer cancel()
		if err := l.fetchClaimed(ctx, spans); err != nil {
			l.log.Warn("lazy: prefetch incomplete: the files are fetched when read", "error", err)
		}
	}()
}

// prefetchSpan is the compressed bytes per range request of a prefetch:
// smaller than the background's, and several at once, so that the first
// files of a layer (what a container reads first) arrive before its last.
func (l *Layer) prefetchSpan() int64 { return min(l.opts.SpanBytes, maxPrefetchSpan) }

// maxPrefetchSpan bounds a prefetch's range requests.
const maxPrefetchSpan = 1 << 20

// prioritized is the streams before the landmark (see Prefetch).
func (l *Layer) prioritized() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.prioritizedLocked()
}

func (l *Layer) prioritizedLocked() []int {
	if _, ok := l.r.Lookup(estargz.NoPrefetchLandmark); ok {
		return nil
	}
	lm, ok := l.r.Lookup(estargz.PrefetchLandmark)
	if !ok {
		return nil
	}
	want := map[int]bool{}
	for i, s := range l.streams {
		if s.off < lm.Offset {
			want[i] = true
		}
	}
	// The files the runtime itself reads as it creates a container are
	// as urgent: its user's groups, before the container's first file.
	for _, name := range runtimeReads {
		if e, ok := l.r.Lookup(name); ok && e.Type == "reg" {
			for _, c := range l.files[e] {
				want[l.chunks[c].stream] = true
			}
		}
	}
	var ids []int
	for i := range l.streams {
		if want[i] && !l.have[i] {
			ids = append(ids, i)
		}
	}
	return ids
}

// runtimeReads are the files of an image a runtime reads to make a
// container's spec (user and group names, supplementary groups).
var runtimeReads = []string{"etc/passwd", "etc/group"}

// fetchClaimed fetches runs of claimed streams, several at once, each with
// one range request retried until ctx is done, and releases every claim.
func (l *Layer) fetchClaimed(ctx context.Context, spans [][]int) error {
	start := time.Now()
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, sp := range spans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.fetchClaimedSpan(ctx, sp); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	err := errors.Join(errs...)
	l.log.Info("lazy: prefetched", "spans", len(spans), "duration", time.Since(start).Round(time.Millisecond), "error", err)
	return err
}

// fetchClaimedSpan fetches one run of streams this fetch claimed, stores
// them and releases them (a failed one for its reader to fetch again).
func (l *Layer) fetchClaimedSpan(ctx context.Context, sp []int) error {
	stored := 0
	defer func() {
		for _, i := range sp[stored:] {
			l.release(i, false)
		}
	}()
	select {
	case prefetchSlots <- struct{}{}:
		defer func() { <-prefetchSlots }()
	case <-ctx.Done():
		return ctx.Err()
	}
	base := l.streams[sp[0]].off
	buf := make([]byte, l.streams[sp[len(sp)-1]].end-base)
	if err := l.readRange(ctx, buf, base, firstBackoff, maxBackoff); err != nil {
		return fmt.Errorf("%w: bytes [%d, %d): %w", ErrUnavailable, base, base+int64(len(buf)), err)
	}
	var errs []error
	for _, i := range sp {
		s := l.streams[i]
		err := l.store(i, buf[s.off-base:s.end-base])
		l.release(i, err == nil)
		stored++
		if err != nil {
			l.log.Error("lazy: chunk not stored", "error", err)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// FetchAll fetches every stream not cached yet, in blob order, a span of
// streams per range request, until the layer is complete or closes; a
// registry that is away is retried for ever (backing off to 30 s). It
// returns the corrupt streams' error, if any, once the rest is cached.
func (l *Layer) FetchAll(ctx context.Context) error {
	ids := make([]int, len(l.streams))
	for i := range ids {
		ids[i] = i
	}
	start := time.Now()
	err := l.fetchSpans(ctx, ids, maxIdleBackoff)
	if serr := l.saveState(); serr != nil {
		err = errors.Join(err, serr)
	}
	l.log.Info("lazy: layer fetched", "bytes", l.Fetched(), "total", l.total, "complete", l.Complete(),
		"duration", time.Since(start).Round(time.Millisecond), "error", err)
	return err
}

// Background runs FetchAll until it is done or the layer closes (once; not
// after Close).
func (l *Layer) Background() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.background || l.isClosed {
		return
	}
	l.background = true
	ctx, cancel := context.WithCancel(context.Background())
	l.wg.Add(2)
	go func() {
		defer l.wg.Done()
		defer cancel()
		if err := l.FetchAll(ctx); err != nil {
			l.log.Warn("lazy: background fetch", "error", err)
		}
	}()
	go func() {
		defer l.wg.Done()
		select {
		case <-ctx.Done():
		case <-l.closed:
			cancel()
		}
	}()
}

// spanSlots bounds the range requests of background fetches in flight in
// the process, all layers together (and so their buffers, at most SpanBytes
// each); prefetchSlots those of prefetches; a read's own fetch takes no slot.
var (
	spanSlots     = make(chan struct{}, 4)
	prefetchSlots = make(chan struct{}, 16)
)

// fetchSpans fetches the streams ids (in blob order) not cached yet, runs
// of adjacent ones with one range request of at most SpanBytes each, several
// at once. A failed request is retried, backing off up to most, until ctx
// is done; a corrupt stream is skipped and its error returned at the end.
func (l *Layer) fetchSpans(ctx context.Context, ids []int, most time.Duration) error {
	var mu sync.Mutex
	var failed []error
	g, ctx := errgroup.WithContext(ctx)
	for _, sp := range l.spans(ids) {
		if prio.quiet(ctx, l.closed, l.opts.Silence) != nil || !takeSlot(ctx) {
			break
		}
		g.Go(func() error {
			defer func() { <-spanSlots }()
			errs, err := l.fetchSpan(ctx, sp, most)
			mu.Lock()
			failed = append(failed, errs...)
			mu.Unlock()
			return err
		})
	}
	err := g.Wait()
	return errors.Join(append(failed, err)...)
}

// takeSlot takes a span slot, or says ctx ended first.
func takeSlot(ctx context.Context) bool {
	select {
	case spanSlots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// fetchSpan fetches one run of streams and stores those no one else has:
// err is the registry's, failed the streams' that could not be stored.
func (l *Layer) fetchSpan(ctx context.Context, sp []int, most time.Duration) (failed []error, err error) {
	base := l.streams[sp[0]].off
	buf := make([]byte, l.streams[sp[len(sp)-1]].end-base)
	if err := l.readRange(ctx, buf, base, firstBackoff, most); err != nil {
		return nil, fmt.Errorf("%w: bytes [%d, %d): %w", ErrUnavailable, base, base+int64(len(buf)), err)
	}
	for _, i := range sp {
		if ok, _ := l.claim(i); !ok {
			continue // cached, or being fetched by a read
		}
		s := l.streams[i]
		err := l.store(i, buf[s.off-base:s.end-base])
		l.release(i, err == nil)
		if err != nil {
			l.log.Error("lazy: chunk not stored", "error", err)
			failed = append(failed, err)
		}
	}
	return failed, nil
}

// spans cuts the missing streams of ids into runs of adjacent streams of at
// most SpanBytes (a bigger stream is a run of its own).
func (l *Layer) spans(ids []int) [][]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.spansLocked(ids, l.opts.SpanBytes, false)
}

// claimSpans is spans of runs of at most most bytes of the streams of ids no
// one has or fetches, each claimed by the caller (release must follow).
func (l *Layer) claimSpans(ids []int, most int64) [][]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.claimSpansLocked(ids, most)
}

func (l *Layer) claimSpansLocked(ids []int, most int64) [][]int {
	return l.spansLocked(ids, most, true)
}

func (l *Layer) spansLocked(ids []int, most int64, claim bool) [][]int {
	var out [][]int
	var cur []int
	for _, i := range ids {
		if l.have[i] || claim && l.inflight[i] != nil {
			continue
		}
		if claim {
			l.inflight[i] = make(chan struct{})
		}
		if len(cur) > 0 && (cur[len(cur)-1] != i-1 || l.streams[i].end-l.streams[cur[0]].off > most) {
			out = append(out, cur)
			cur = nil
		}
		cur = append(cur, i)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
