// Package annotations names the pod annotations archfilter reads: they are a
// public API, like the ArchFilterArgs fields.
package annotations

const (
	// Skip, set to "true", opts a pod out of ArchFilter entirely.
	Skip = "archfilter.io/skip"
	// Platforms declares the platforms a pod runs on ("linux/amd64,linux/arm64")
	// so archfilter never asks a registry: for preloaded images, registries the
	// scheduler cannot reach, or to narrow a multi-arch image.
	Platforms = "archfilter.io/platforms"
	// PreferredPlatforms overrides the configured preferredPlatforms for one
	// pod: "linux/arm64=100,linux/amd64=10" (weights 1-100).
	PreferredPlatforms = "archfilter.io/preferred-platforms"
)
