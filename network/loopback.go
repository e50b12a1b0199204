package network

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// bringUpLoopback sets `lo` up in the netns at path over netlink, in
// process: the loopback plugin would cost a fork+exec per ADD and DEL.
func bringUpLoopback(path string) error {
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return fmt.Errorf("open netns %s: %w", path, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("netlink handle in netns %s: %w", path, err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find lo in netns %s: %w", path, err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("set lo up in netns %s: %w", path, err)
	}
	return nil
}
