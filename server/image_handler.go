package server

import (
	"strconv"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// checkImageHandler refuses an ImageSpec.runtime_handler minicri does not
// have, as the CRI asks ("If the runtime handler is unknown, the request
// should be rejected"; the kubelet sends it with RuntimeClassInImageCriApi).
// Every handler shares one image store, so a known one changes nothing.
func (s *Server) checkImageHandler(spec *runtimeapi.ImageSpec) error {
	h := spec.GetRuntimeHandler()
	if h == "" {
		return nil
	}
	for _, known := range s.runtimeHandlers() {
		if known.GetName() == h {
			return nil
		}
	}
	return invalid("unknown runtime handler " + strconv.Quote(h) + " in image.runtime_handler")
}
