package crilog

import "os"

// OpenFile opens (creating) the log name beneath the pod log directory dir
// for appending, as Open does, and returns the file itself: the monitor's
// helper hands it to the long-lived monitor, which writes the log lines.
func OpenFile(dir, name string) (*os.File, error) { return openBeneath(dir, name) }
