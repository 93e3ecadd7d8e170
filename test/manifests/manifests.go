// Package manifests reads and checks the deployable manifests
// (manifests/base, manifests/overlays): what an overlay must produce and what
// its RBAC must (and must not) allow. The unit tests (cmd/scheduler) run the
// checks on the files through Load, the e2e tests (test/e2e) on kustomize's
// own output, and submit that to an API server.
package manifests

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"sigs.k8s.io/yaml"

	// ArchFilterArgs in kube-scheduler's configuration scheme.
	_ "github.com/archfilter/archfilter/apis/config/scheme"
	"github.com/archfilter/archfilter/test/manifests/objects"
)

// Names the manifests and the code agree on.
const (
	Namespace      = "kube-system"
	Name           = "archfilter-scheduler" // ServiceAccount, Deployment, ClusterRole, lease, schedulerName
	Image          = "archfilter/archfilter-scheduler"
	Entrypoint     = "/usr/local/bin/archfilter-scheduler" // the Dockerfile's ENTRYPOINT
	SecurePort     = 10259
	ConfigMapName  = "archfilter-scheduler-config"
	ConfigKey      = "config.yaml"
	ConfigDir      = "/etc/archfilter"
	MetricsService = "archfilter-scheduler-metrics"

	// Overlays, relative to the repository root.
	SecondaryOverlay = "manifests/overlays/secondary"
	// SecondaryK8s135Overlay is SecondaryOverlay with the k8s1.35 flavour's image.
	SecondaryK8s135Overlay = "manifests/overlays/secondary-k8s1.35"
	KubeadmOverlay         = "manifests/overlays/kubeadm-replacement"
	// KubeadmNodeDir holds the files copied onto control-plane nodes.
	KubeadmNodeDir = KubeadmOverlay + "/node"
	// KindOverlay is the secondary overlay with the kind e2e registries.
	KindOverlay = "test/e2e/testdata/kind-overlay"
)

// Root is the repository root.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Path is a repository-relative path made absolute.
func Path(rel string) string { return filepath.Join(Root(), filepath.FromSlash(rel)) }

// Documents, Kind and Decode are the objects package's (strict decoding of
// client-go's kinds), shared with the chart's tests.
var (
	Documents = objects.Documents
	Kind      = objects.Kind
	Decode    = objects.Decode
)

// DecodeFile is Decode of a file.
func DecodeFile(path string) ([]k8sruntime.Object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	objs, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return objs, nil
}

// LoadSchedulerConfig decodes a KubeSchedulerConfiguration the way
// kube-scheduler decodes --config: strictly, with defaults and ArchFilterArgs.
func LoadSchedulerConfig(data []byte) (*schedconfig.KubeSchedulerConfiguration, error) {
	dir, err := os.MkdirTemp("", "archfilter-config-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, ConfigKey)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return nil, err
	}
	return options.LoadConfigFromFile(klog.Background(), path)
}

// Kustomization is the part of kustomize's Kustomization these manifests use.
// It is decoded strictly: a field kustomize has and this struct lacks fails
// the tests, so Load never silently ignores what kustomize would do.
type Kustomization struct {
	APIVersion         string                `json:"apiVersion"`
	Kind               string                `json:"kind"`
	Namespace          string                `json:"namespace,omitempty"`
	Labels             []KustomizationLabels `json:"labels,omitempty"`
	Resources          []string              `json:"resources,omitempty"`
	ConfigMapGenerator []ConfigMapGenerator  `json:"configMapGenerator,omitempty"`
	Images             []KustomizationImage  `json:"images,omitempty"`
}

// KustomizationLabels is kustomize's labels entry.
type KustomizationLabels struct {
	Pairs            map[string]string `json:"pairs"`
	IncludeSelectors bool              `json:"includeSelectors,omitempty"`
	IncludeTemplates bool              `json:"includeTemplates,omitempty"`
}

// ConfigMapGenerator is kustomize's configMapGenerator entry (files only).
type ConfigMapGenerator struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace,omitempty"`
	Behavior  string            `json:"behavior,omitempty"`
	Files     []string          `json:"files"`
	Options   *GeneratorOptions `json:"options,omitempty"`
}

// GeneratorOptions is kustomize's generator options (labels only).
type GeneratorOptions struct {
	Labels map[string]string `json:"labels,omitempty"`
}

// KustomizationImage is kustomize's images entry.
type KustomizationImage struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
}

// ReadKustomization strictly decodes dir/kustomization.yaml.
func ReadKustomization(dir string) (*Kustomization, error) {
	path := filepath.Join(dir, "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var k Kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		return nil, fmt.Errorf("%s: apiVersion %q kind %q, want kustomize.config.k8s.io/v1beta1 Kustomization", path, k.APIVersion, k.Kind)
	}
	for _, g := range k.ConfigMapGenerator {
		for _, f := range g.Files {
			if strings.Contains(f, "=") {
				return nil, fmt.Errorf("%s: configMapGenerator %s: key=file is not supported here", path, g.Name)
			}
			// kustomize's default load restrictor (and so `kubectl apply -k`)
			// refuses files outside the kustomization's directory.
			if !filepath.IsLocal(f) {
				return nil, fmt.Errorf("%s: configMapGenerator %s: %s is outside the kustomization", path, g.Name, f)
			}
		}
		switch g.Behavior {
		case "", "create", "replace":
		default:
			return nil, fmt.Errorf("%s: configMapGenerator %s: behavior %q is not supported here", path, g.Name, g.Behavior)
		}
	}
	return &k, nil
}

// Component is the part of kustomize's Component (kustomize.config.k8s.io/
// v1alpha1) the components under manifests/components use, decoded strictly.
// Load does not apply components: the e2e tests render them with kustomize.
type Component struct {
	APIVersion         string                `json:"apiVersion"`
	Kind               string                `json:"kind"`
	Labels             []KustomizationLabels `json:"labels,omitempty"`
	Resources          []string              `json:"resources,omitempty"`
	ConfigMapGenerator []ConfigMapGenerator  `json:"configMapGenerator,omitempty"`
	Patches            []Patch               `json:"patches,omitempty"`
}

// Patch is kustomize's patches entry: an inline patch (JSON 6902 or strategic
// merge) and the resources it applies to.
type Patch struct {
	Patch  string       `json:"patch"`
	Target *PatchTarget `json:"target"`
}

// PatchTarget selects the resources a Patch applies to.
type PatchTarget struct {
	Group         string `json:"group,omitempty"`
	Version       string `json:"version,omitempty"`
	Kind          string `json:"kind"`
	Name          string `json:"name,omitempty"`
	Namespace     string `json:"namespace,omitempty"`
	LabelSelector string `json:"labelSelector,omitempty"`
}

// ReadComponent strictly decodes dir/kustomization.yaml as a Component: every
// patch names its target (a patch without one would need its own
// apiVersion/kind/name to match), and every file it reads is inside dir.
func ReadComponent(dir string) (*Component, error) {
	path := filepath.Join(dir, "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Component
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.APIVersion != "kustomize.config.k8s.io/v1alpha1" || c.Kind != "Component" {
		return nil, fmt.Errorf("%s: apiVersion %q kind %q, want kustomize.config.k8s.io/v1alpha1 Component", path, c.APIVersion, c.Kind)
	}
	for i, p := range c.Patches {
		if p.Target == nil || p.Target.Kind == "" || strings.TrimSpace(p.Patch) == "" {
			return nil, fmt.Errorf("%s: patches[%d]: want a target with a kind, and an inline patch", path, i)
		}
	}
	for _, f := range c.Resources {
		if !filepath.IsLocal(f) {
			return nil, fmt.Errorf("%s: resource %s is outside the component", path, f)
		}
	}
	for _, g := range c.ConfigMapGenerator {
		for _, f := range g.Files {
			if !filepath.IsLocal(f) || strings.Contains(f, "=") {
				return nil, fmt.Errorf("%s: configMapGenerator %s: %s: want a file inside the component", path, g.Name, f)
			}
		}
	}
	return &c, nil
}

// Load gathers the objects a kustomization produces, without kustomize and
// for the features above only: resources (files and directories),
// namespace, labels, configMapGenerator (create and replace; without the
// content-hash suffix kustomize appends to the name) and images. The e2e
// tests render with kustomize itself and run the same checks on its output.
// Files lists every file read (kustomizations, resources, generator inputs).
func Load(dir string) (objs []k8sruntime.Object, files []string, err error) {
	k, err := ReadKustomization(dir)
	if err != nil {
		return nil, nil, err
	}
	files = append(files, filepath.Join(dir, "kustomization.yaml"))
	for _, res := range k.Resources {
		path := filepath.Join(dir, res)
		st, err := os.Stat(path)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: resource %s: %w", dir, res, err)
		}
		if st.IsDir() {
			sub, subFiles, err := Load(path)
			if err != nil {
				return nil, nil, err
			}
			objs, files = append(objs, sub...), append(files, subFiles...)
			continue
		}
		sub, err := DecodeFile(path)
		if err != nil {
			return nil, nil, err
		}
		objs, files = append(objs, sub...), append(files, path)
	}
	for _, g := range k.ConfigMapGenerator {
		cm := &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: g.Name, Namespace: g.Namespace, Labels: map[string]string{}},
			Data:       map[string]string{},
		}
		if cm.Namespace == "" {
			cm.Namespace = k.Namespace
		}
		if g.Options != nil {
			for key, v := range g.Options.Labels {
				cm.Labels[key] = v
			}
		}
		for _, f := range g.Files {
			path := filepath.Join(dir, f)
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: configMapGenerator %s: %w", dir, g.Name, err)
			}
			cm.Data[filepath.Base(f)] = string(b)
			files = append(files, path)
		}
		if g.Behavior == "replace" {
			i := slices.IndexFunc(objs, func(o k8sruntime.Object) bool {
				old, ok := o.(*corev1.ConfigMap)
				return ok && old.Name == cm.Name && (cm.Namespace == "" || old.Namespace == cm.Namespace)
			})
			if i < 0 {
				return nil, nil, fmt.Errorf("%s: configMapGenerator %s: behavior replace, but no such ConfigMap in the resources", dir, g.Name)
			}
			// kustomize keeps the replaced ConfigMap's labels (the new ones win).
			old := objs[i].(*corev1.ConfigMap)
			for key, v := range old.Labels {
				if _, ok := cm.Labels[key]; !ok {
					cm.Labels[key] = v
				}
			}
			cm.Namespace = old.Namespace
			objs[i] = cm
			continue
		}
		objs = append(objs, cm)
	}
	for _, o := range objs {
		m, _ := meta.Accessor(o)
		if k.Namespace != "" && namespaced(o) {
			m.SetNamespace(k.Namespace)
		}
		for _, l := range k.Labels {
			labels := m.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			for key, v := range l.Pairs {
				labels[key] = v
			}
			m.SetLabels(labels)
		}
		for _, im := range k.Images {
			for _, spec := range podSpecs(o) {
				for i := range spec.Containers {
					spec.Containers[i].Image = retag(spec.Containers[i].Image, im)
				}
			}
		}
	}
	return objs, files, nil
}

func namespaced(o k8sruntime.Object) bool {
	switch o.GetObjectKind().GroupVersionKind().Kind {
	case "Namespace", "ClusterRole", "ClusterRoleBinding", "PriorityClass", "CustomResourceDefinition":
		return false
	}
	return true
}

// ImageName splits an image reference into its name and tag (no digests here).
func ImageName(ref string) (name, tag string) {
	slash := strings.LastIndex(ref, "/")
	if i := strings.LastIndex(ref, ":"); i > slash {
		return ref[:i], ref[i+1:]
	}
	return ref, ""
}

func retag(ref string, im KustomizationImage) string {
	name, tag := ImageName(ref)
	if name != im.Name {
		return ref
	}
	if im.NewName != "" {
		name = im.NewName
	}
	if im.NewTag != "" {
		tag = im.NewTag
	}
	if tag == "" {
		return name
	}
	return name + ":" + tag
}
