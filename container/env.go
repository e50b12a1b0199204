package container

import "os"

// hostnameEnv is the variable containerd and CRI-O put in every container's
// environment, before the image's and the request's (which may override it).
const hostnameEnv = "HOSTNAME"

// podHostname is the hostname the pod's containers see: the requested one,
// or, when the request has none (the pause then keeps the host's name in
// its UTS namespace), the host's, as containerd does.
func podHostname(pod *PodInfo) string {
	if pod.Hostname != "" {
		return pod.Hostname
	}
	h, _ := os.Hostname()
	return h
}
