//go:build linux

package ociimage

import (
	"testing"

	"github.com/archfilter/archfilter/internal/registrytest"
)

// The registry make image pushes to in the project's tests and many sites run:
// CNCF Distribution (Debian's docker-registry), which has no referrers API
// and checks that every blob a manifest names exists.
func TestSBOMReferrersOnDistribution(t *testing.T) {
	s := specWithSBOMs(released...)
	reg := registrytest.StartDistribution(t, registrytest.DistributionOptions{})
	checkSBOMs(t, pushWithSBOM(t, reg.Host(), s), s)
}
