// Package charttest tests the archfilter Helm chart with Helm's own library:
// lint, rendering of every mode and values combination, the values schema,
// the scheduler configuration it renders (decoded and validated by
// archfilter's apis/config), its equality with manifests/, and an
// install/upgrade/uninstall against a real API server (make test-chart).
package charttest

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/archfilter/archfilter/test/manifests/objects"
)

// Namespace is where the chart is meant to be installed (the lease and the
// authentication ConfigMap are there), as manifests/base.
const Namespace = "kube-system"

// repoRoot is the repository's root directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// repoPath makes a repository-relative path absolute.
func repoPath(rel string) string { return filepath.Join(repoRoot(), filepath.FromSlash(rel)) }

// chartDir is charts/archfilter.
func chartDir() string { return repoPath("charts/archfilter") }

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// renderOpts are what differs between renderings besides the values.
type renderOpts struct {
	namespace   string
	apiVersions []string // e.g. monitoring.coreos.com/v1/ServiceMonitor
	kubeMinor   string   // the cluster's minor version, default 37
}

// dryRun installs the chart the way `helm template` renders it (Helm's
// install action, client-only), values checked against values.schema.json.
func dryRun(t *testing.T, values map[string]any, opts renderOpts) (*release.Release, error) {
	t.Helper()
	ns := opts.namespace
	if ns == "" {
		ns = Namespace
	}
	minor := opts.kubeMinor
	if minor == "" {
		minor = "37"
	}
	cfg := &action.Configuration{
		Releases:     storage.Init(driver.NewMemory()),
		KubeClient:   &fake.PrintingKubeClient{Out: io.Discard},
		Capabilities: chartutil.DefaultCapabilities,
		Log:          t.Logf,
	}
	install := action.NewInstall(cfg)
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true
	install.ReleaseName = "archfilter"
	install.Namespace = ns
	install.KubeVersion = &chartutil.KubeVersion{Version: "v1." + minor + ".2", Major: "1", Minor: minor}
	install.APIVersions = opts.apiVersions
	return install.Run(loadChart(t), values)
}

// render returns the manifests dryRun renders.
func render(t *testing.T, values map[string]any, opts renderOpts) (string, error) {
	t.Helper()
	rel, err := dryRun(t, values, opts)
	if err != nil {
		return "", err
	}
	return rel.Manifest, nil
}

// mustRender is render that fails the test on an error.
func mustRender(t *testing.T, values map[string]any, opts renderOpts) []k8sruntime.Object {
	t.Helper()
	out, err := render(t, values, opts)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	objs, err := decodeAll([]byte(out))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return objs
}

// decodeAll decodes every document of a YAML stream: client-go's kinds
// strictly into typed objects, others (monitoring.coreos.com,
// cert-manager.io) as unstructured.
func decodeAll(data []byte) ([]k8sruntime.Object, error) {
	docs, err := objects.Documents(data)
	if err != nil {
		return nil, err
	}
	var objs []k8sruntime.Object
	for i, doc := range docs {
		tm, err := objects.Kind(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if strings.HasPrefix(tm.APIVersion, "monitoring.coreos.com/") || strings.HasPrefix(tm.APIVersion, "cert-manager.io/") {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &u.Object); err != nil {
				return nil, fmt.Errorf("document %d: %w", i+1, err)
			}
			objs = append(objs, u)
			continue
		}
		obj, err := objects.DecodeStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// readFile reads a repository-relative file.
func readFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(repoPath(rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
