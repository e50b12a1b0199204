// A stand-in for sigs.k8s.io/iptables-wrappers v1.0.0, which Kubernetes 1.38's kubelet and
// kube-proxy import and the Go module proxy does not serve (README.md). The Kubernetes
// wrapper modules (../k8s, ../k8s-test) replace the module with this directory.
module sigs.k8s.io/iptables-wrappers

go 1.26.0
