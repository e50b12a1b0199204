package image

import "time"

// PullObserver is told of every pull that reached a registry (the daemon's
// metrics): the bytes it downloaded, how long it took, and its error.
type PullObserver interface {
	PullDone(bytes int64, d time.Duration, err error)
}
