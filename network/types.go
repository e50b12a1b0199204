package network

// PortMapping is one hostPort of a pod.
type PortMapping struct {
	HostPort      int32
	ContainerPort int32
	Protocol      string // "tcp", "udp" or "sctp"; empty means tcp
	HostIP        string
}

// Pod names the pod whose network is set up or torn down.
type Pod struct {
	ID, Name, Namespace, UID string
	NetNSPath                string
	PortMappings             []PortMapping
	CgroupParent             string
}

// Result is the outcome of Setup.
type Result struct {
	IPs     []string // primary first, no prefix length
	Network string   // CNI network name used
}
