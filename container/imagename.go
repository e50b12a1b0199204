package container

// annotatedImageName is the image name the spec's annotations carry: the
// image as the pod names it when the kubelet says so (it sends the image
// ID as the image), else the image as requested.
func annotatedImageName(cfg *Config) string {
	if cfg.UserSpecifiedImage != "" {
		return cfg.UserSpecifiedImage
	}
	return cfg.Image
}
