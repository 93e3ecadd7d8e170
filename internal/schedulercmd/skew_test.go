package schedulercmd

import (
	"runtime/debug"
	"strings"
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

func TestSkewError(t *testing.T) {
	v := utilversion.MustParseGeneric
	for _, tc := range []struct {
		name, server, scheduler string
		errHas                  []string // nil: no error
	}{
		{name: "same minor", server: "v1.37.2", scheduler: "v1.37.2"},
		{name: "API server one minor newer", server: "v1.38.0-beta.0", scheduler: "v1.37.2"},
		{name: "API server older patch", server: "v1.37.0", scheduler: "v1.37.2"},
		{name: "managed control plane's version string", server: "v1.37.1-eks-3f2a1b", scheduler: "v1.37.2"},
		{name: "main line on a 1.36 API server", server: "v1.36.5", scheduler: "v1.37.2",
			errHas: []string{"Kubernetes 1.36.5, older than this scheduler", "Kubernetes 1.37.2", "never newer",
				"use the k8s1.35 flavour (image tag <version>-k8s1.35; API servers 1.35 and 1.36)"}},
		{name: "main line on a 1.35 API server", server: "v1.35.8", scheduler: "v1.37.2",
			errHas: []string{"Kubernetes 1.35.8", "use the k8s1.35 flavour"}},
		{name: "k8s1.35 flavour on a 1.34 API server", server: "v1.34.7", scheduler: "v1.35.8",
			errHas: []string{"Kubernetes 1.34.7", "no archfilter flavour supports it", "upgrade the control plane"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := skewError(v(tc.server), v(tc.scheduler))
			if tc.errHas == nil {
				if err != nil {
					t.Fatalf("skewError: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("skewError accepted it")
			}
			for _, s := range tc.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}

func TestSkewWarning(t *testing.T) {
	v := utilversion.MustParseGeneric
	if w := skewWarning(v("v1.36.5"), v("v1.35.8")); w != "" {
		t.Errorf("one minor newer is supported, got warning %q", w)
	}
	w := skewWarning(v("v1.37.2"), v("v1.35.8"))
	for _, s := range []string{"Kubernetes 1.37.2", "more than one minor newer", "use the main line"} {
		if !strings.Contains(w, s) {
			t.Errorf("warning %q does not say %q", w, s)
		}
	}
}

// TestShippedFlavoursMatchTheModuleGraph: the flavour this test is built as
// is in the table with the minor of the k8s.io/kubernetes it is built from.
func TestShippedFlavoursMatchTheModuleGraph(t *testing.T) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("no build information")
	}
	var kube *utilversion.Version
	for _, dep := range info.Deps {
		if dep.Path == "k8s.io/kubernetes" {
			if dep.Replace != nil {
				dep = dep.Replace
			}
			kube = utilversion.MustParseGeneric(dep.Version)
		}
	}
	if kube == nil {
		t.Fatal("k8s.io/kubernetes is not in the build information")
	}
	name := thisFlavour
	for _, f := range shippedFlavours {
		if f.Name == name {
			if f.Minor != kube.Minor() {
				t.Errorf("flavour %s: table says Kubernetes 1.%d, built from %s", name, f.Minor, kube)
			}
			return
		}
	}
	t.Errorf("flavour %s is not in shippedFlavours", name)
}
