// Package annotations names the pod annotations archfilter reads: they are a
// public API, like the ArchFilterArgs fields.
package annotations

import (
	"fmt"
	"strconv"
)

const (
	// Skip, set to "true" (or another spelling of true: see ParseSkip), opts a
	// pod out of ArchFilter entirely.
	Skip = "archfilter.io/skip"
	// Platforms declares the platforms a pod runs on ("linux/amd64,linux/arm64")
	// so archfilter never asks a registry: for preloaded images, registries the
	// scheduler cannot reach, or to narrow a multi-arch image.
	Platforms = "archfilter.io/platforms"
	// PreferredPlatforms overrides the configured preferredPlatforms for one
	// pod: "linux/arm64=100,linux/amd64=10" (weights 1-100).
	PreferredPlatforms = "archfilter.io/preferred-platforms"
	// Decision is written by the placement mode, not by users: the decision it
	// took for the pod (platforms, where they came from, when, by which
	// version), as JSON, so that kubectl archfilter why shows the decision the
	// cluster acted on.
	Decision = "archfilter.io/decision"
)

// Prefix starts every annotation archfilter reads or writes.
const Prefix = "archfilter.io/"

// Known lists every annotation archfilter reads or writes on pods. Any other key with
// Prefix is a mistake, which package decision's LintAnnotations reports with the
// nearest of these: a new annotation is added here too.
var Known = []string{Platforms, Skip, PreferredPlatforms, Decision}

// ParseSkip reads the value of the Skip annotation as strconv.ParseBool does:
// "true", "True", "TRUE", "t", "T" and "1" skip the pod; "false", "False",
// "FALSE", "f", "F", "0" and an absent annotation ("") do not (the error lists
// exactly these, so keep them equal). Any other value
// does not skip the pod either, and is reported as an error naming the
// annotation, so that a typo ("yes") is seen rather than silently ignored.
func ParseSkip(value string) (bool, error) {
	if value == "" {
		return false, nil
	}
	skip, err := strconv.ParseBool(value)
	if err != nil {
		return false, fmt.Errorf("annotation %s: %q is not true or false (want one of true, True, TRUE, t, T, 1 or false, False, FALSE, f, F, 0); the pod is not skipped", Skip, value)
	}
	return skip, nil
}
