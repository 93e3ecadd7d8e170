package archfilter

import (
	"strings"
	"testing"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
	k8sversion "k8s.io/component-base/version"

	"github.com/archfilter/archfilter/pkg/version"
)

// archfilter_build_info says which archfilter and Kubernetes run, for
// dashboards and alerts that must tell flavours and upgrades apart.
func TestBuildInfoMetric(t *testing.T) {
	registerMetrics()
	want := `
# HELP archfilter_build_info [ALPHA] Always 1, labelled with archfilter's version (with the flavour suffix, e.g. -k8s1.35) and the Kubernetes version it is built from.
# TYPE archfilter_build_info gauge
archfilter_build_info{kubernetes_version="` + k8sversion.Get().GitVersion + `",version="` + version.Version + `"} 1
`
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(want), "archfilter_build_info"); err != nil {
		t.Error(err)
	}
}
