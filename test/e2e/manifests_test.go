package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/archfilter/archfilter/test/e2e/framework"
	"github.com/archfilter/archfilter/test/manifests"
	"github.com/archfilter/archfilter/test/toolscache"
)

// The deployable manifests, rendered by kustomize itself: the version
// kubectl embeds (`kubectl apply -k`), taken from this module graph and
// built once into the per-user tools cache (hack/cluster/tools.sh kustomize,
// ~30 s). The unit tests in cmd/scheduler check the files; these check what
// kustomize makes of them and what an API server says about it.

var kustomizeBuild struct {
	sync.Once
	path string
	err  error
}

// kustomize returns the kustomize binary ($KUSTOMIZE, or the tools cache's).
// Without a cluster it builds it only when asked (E2E_MANIFESTS=1, as `make
// manifests-check` does), so `go test ./...` stays offline.
func kustomize(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("KUSTOMIZE"); p != "" {
		return p
	}
	kustomizeBuild.Do(func() {
		root := framework.RepoRoot()
		if p, ok := toolscache.Built(root, "kustomize"); ok {
			kustomizeBuild.path = p
			return
		}
		if env == nil && os.Getenv("E2E_MANIFESTS") == "" {
			kustomizeBuild.err = errSkip
			return
		}
		kustomizeBuild.path, kustomizeBuild.err = toolscache.Build(root, "kustomize")
	})
	if kustomizeBuild.err == errSkip {
		t.Skip("kustomize is not built: `make manifests-check` or `make e2e` builds it (hack/cluster/tools.sh kustomize)")
	}
	if kustomizeBuild.err != nil {
		t.Fatal(kustomizeBuild.err)
	}
	return kustomizeBuild.path
}

var errSkip = fmt.Errorf("skip")

// render runs `kustomize build` on a repository-relative directory and
// returns its output and its objects, strictly decoded.
func render(t *testing.T, dir string) ([]byte, []runtime.Object) {
	t.Helper()
	out, err := runKustomize(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifests.Decode(out)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	return out, objs
}

// runKustomize runs `kustomize build` on a repository-relative directory.
func runKustomize(t *testing.T, dir string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(kustomize(t), "build", manifests.Path(dir))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w\n%s", dir, err, stderr.String())
	}
	return out, nil
}

func repoFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(manifests.Path(rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// overlays are what `kubectl apply -k` is pointed at, with their checks.
func overlays(t *testing.T) []struct {
	dir   string
	check func([]runtime.Object) error
} {
	secondary := repoFile(t, "manifests/scheduler-config/secondary-scheduler.yaml")
	kind := repoFile(t, manifests.KindOverlay+"/config.yaml")
	return []struct {
		dir   string
		check func([]runtime.Object) error
	}{
		{manifests.SecondaryOverlay, func(o []runtime.Object) error { return manifests.CheckSecondary(o, secondary) }},
		{manifests.SecondaryK8s135Overlay, func(o []runtime.Object) error { return manifests.CheckSecondary(o, secondary) }},
		{manifests.KubeadmOverlay, manifests.CheckKubeadmRBAC},
		{manifests.KindOverlay, func(o []runtime.Object) error { return manifests.CheckSecondary(o, kind) }},
		{manifests.HealOverlay, func(o []runtime.Object) error { return manifests.CheckHealOverlay(o, secondary) }},
	}
}

var hashedConfigMap = regexp.MustCompile(`^` + manifests.ConfigMapName + `-[a-z0-9]{10}$`)

// TestManifestsRender renders each overlay with kustomize and checks the
// output: the checks of the unit tests (exact objects, Deployment, Service,
// RBAC rules and what the RBAC authorizer allows), a content-hashed ConfigMap
// the Deployment mounts, labels, and that manifests.Load (the unit tests'
// reading of the kustomizations) agrees with kustomize object for object.
func TestManifestsRender(t *testing.T) {
	for _, o := range overlays(t) {
		t.Run(o.dir, func(t *testing.T) {
			_, objs := render(t, o.dir)
			if err := o.check(objs); err != nil {
				t.Fatal(err)
			}
			for _, obj := range objs {
				m, _ := meta.Accessor(obj)
				if m.GetLabels()["app.kubernetes.io/part-of"] != "archfilter" {
					t.Errorf("%s: no label app.kubernetes.io/part-of=archfilter", manifests.ID(obj))
				}
				if cm, ok := obj.(*corev1.ConfigMap); ok && !hashedConfigMap.MatchString(cm.Name) {
					t.Errorf("%s: want the content hash in the name, so a new config rolls the Deployment", manifests.ID(obj))
				}
			}
			loaded, _, err := manifests.Load(manifests.Path(o.dir))
			if err != nil {
				t.Fatal(err)
			}
			want, got := byID(t, loaded), byID(t, objs)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("manifests.Load and kustomize disagree (-Load +kustomize):\n%s", diff)
			}
		})
	}
}

// byID maps objects by ID to their JSON form, with the ConfigMap's hash
// suffix removed (Load does not hash).
func byID(t *testing.T, objs []runtime.Object) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, o := range objs {
		o = o.DeepCopyObject()
		switch o := o.(type) {
		case *corev1.ConfigMap:
			o.Name = manifests.ConfigMapName
		case *appsv1.Deployment:
			for _, v := range o.Spec.Template.Spec.Volumes {
				if v.ConfigMap != nil && hashedConfigMap.MatchString(v.ConfigMap.Name) {
					v.ConfigMap.Name = manifests.ConfigMapName
				}
			}
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		out[manifests.Inventory([]runtime.Object{o})[0]] = u
	}
	return out
}

// TestManifestsKindOverlay: the kind provider's overlay is the secondary
// overlay whose configuration adds, and only adds, the kind network's
// plain-HTTP registries (no cluster, no kustomize needed).
func TestManifestsKindOverlay(t *testing.T) {
	kindConfig := repoFile(t, manifests.KindOverlay+"/config.yaml")
	var got, want map[string]any
	if err := yaml.Unmarshal(kindConfig, &got); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(repoFile(t, "manifests/scheduler-config/secondary-scheduler.yaml"), &want); err != nil {
		t.Fatal(err)
	}
	args := got["profiles"].([]any)[0].(map[string]any)["pluginConfig"].([]any)[0].(map[string]any)["args"].(map[string]any)
	registries := args["registries"]
	delete(args, "registries")
	// test/e2e/framework/kind.go's registry containers.
	wantRegistries := []any{
		map[string]any{"host": "archfilter-e2e-registry:5000", "insecure": true},
		map[string]any{"host": "archfilter-e2e-registry-private:5000", "insecure": true},
	}
	if diff := cmp.Diff(wantRegistries, registries); diff != "" {
		t.Errorf("registries (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s/config.yaml is not secondary-scheduler.yaml plus registries (-want +got):\n%s", manifests.KindOverlay, diff)
	}
	objs, _, err := manifests.Load(manifests.Path(manifests.KindOverlay))
	if err != nil {
		t.Fatal(err)
	}
	if err := manifests.CheckSecondary(objs, kindConfig); err != nil {
		t.Fatal(err)
	}
}

// applier submits objects with server-side apply.
type applier struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

func newApplier(t *testing.T) *applier {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{dyn: dynamic.NewForConfigOrDie(cfg), mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

func (a *applier) resource(u *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := u.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return a.dyn.Resource(m.Resource).Namespace(u.GetNamespace()), nil
	}
	return a.dyn.Resource(m.Resource), nil
}

const fieldManager = "archfilter-e2e-manifests"

// apply server-side applies u; dryRun: the API server validates, admits and
// defaults it, and stores nothing. Unknown fields are errors.
func (a *applier) apply(ctx context.Context, u *unstructured.Unstructured, dryRun bool) error {
	ri, err := a.resource(u)
	if err != nil {
		return err
	}
	data, err := json.Marshal(u.Object)
	if err != nil {
		return err
	}
	opts := metav1.PatchOptions{FieldManager: fieldManager, Force: ptr.To(true), FieldValidation: metav1.FieldValidationStrict}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = ri.Patch(ctx, u.GetName(), types.ApplyPatchType, data, opts)
	return err
}

func (a *applier) delete(ctx context.Context, u *unstructured.Unstructured) error {
	ri, err := a.resource(u)
	if err != nil {
		return err
	}
	err = ri.Delete(ctx, u.GetName(), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// unstructuredDocs parses every document of a YAML stream, as kubectl does.
func unstructuredDocs(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	docs, err := manifests.Documents(data)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

func uid(u *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
}

// TestManifestsServerDryRun is `kubectl apply -k --server-side --dry-run=server`
// of every overlay, plus the kubeadm static pod as a Pod: the API server
// validates each object against its schema (unknown fields are errors) and
// runs admission, and stores nothing.
func TestManifestsServerDryRun(t *testing.T) {
	if env == nil {
		t.Skip(skipReason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := newApplier(t)
	var secondary []*unstructured.Unstructured
	for _, o := range overlays(t) {
		t.Run(o.dir, func(t *testing.T) {
			out, _ := render(t, o.dir)
			objs := unstructuredDocs(t, out)
			if o.dir == manifests.SecondaryOverlay {
				secondary = objs
			}
			for _, u := range objs {
				if err := a.apply(ctx, u, true); err != nil {
					t.Errorf("%s: %v", uid(u), err)
				}
			}
		})
	}
	t.Run(manifests.KubeadmNodeDir+"/kube-scheduler.yaml", func(t *testing.T) {
		for _, u := range unstructuredDocs(t, repoFile(t, manifests.KubeadmNodeDir+"/kube-scheduler.yaml")) {
			if err := a.apply(ctx, u, true); err != nil {
				t.Errorf("%s: %v", uid(u), err)
			}
		}
	})
	if env.Provider == "kind" {
		return // the kind provider deployed the overlay for real
	}
	// A dry run stores nothing.
	for _, u := range secondary {
		if k := u.GetKind(); k != "Deployment" && k != "ConfigMap" {
			continue
		}
		ri, err := a.resource(u)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s after a dry run: %v, want NotFound", uid(u), err)
		}
	}
}

// allowed asks the API server (SubjectAccessReview) whether u may make r.
func allowed(ctx context.Context, t *testing.T, u user.Info, r manifests.Request) bool {
	t.Helper()
	res, err := env.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: u.GetName(), Groups: u.GetGroups(),
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: r.Namespace, Verb: r.Verb, Group: r.Group, Resource: r.Resource, Subresource: r.Subresource, Name: r.Name,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SubjectAccessReview: %v", err)
	}
	return res.Status.Allowed
}

// TestManifestsRBAC applies the overlays' RBAC for real and checks it on the
// API server: SubjectAccessReviews for the ServiceAccount and for kubeadm's
// user (every request a scheduler makes allowed, ForbiddenRequests denied,
// secrets not listable before the apply), then runs archfilter-scheduler as
// the ServiceAccount (impersonated) with the overlay's configuration and
// delegated authentication: it must take the lease, place pods of a private
// image (pull secrets read through the ClusterRole), serve /readyz
// anonymously and /metrics to an authorized client only, and log no
// "forbidden". Everything it applied is deleted afterwards.
func TestManifestsRBAC(t *testing.T) {
	if env == nil {
		t.Skip(skipReason)
	}
	if env.Provider == "kind" {
		t.Skip("the kind provider runs the manifests' Deployment itself")
	}
	ctx, ns := setup(t)
	a := newApplier(t)
	sa := manifests.ServiceAccountUser()
	listSecrets := manifests.Request{Verb: "list", Resource: "secrets"}
	if allowed(ctx, t, sa, listSecrets) || allowed(ctx, t, manifests.KubeadmUser(), listSecrets) {
		t.Fatal("secrets are listable before the manifests are applied: the checks below would prove nothing")
	}

	// The RBAC objects (and the ServiceAccount) of both overlays.
	out, _ := render(t, manifests.SecondaryOverlay)
	var config string
	var applied []*unstructured.Unstructured
	t.Cleanup(func() {
		for _, u := range slices.Backward(applied) {
			if err := a.delete(context.Background(), u); err != nil {
				t.Errorf("deleting %s: %v", uid(u), err)
			}
		}
		_ = env.Client.CoordinationV1().Leases(manifests.Namespace).Delete(context.Background(), manifests.Name, metav1.DeleteOptions{})
	})
	kubeadmOut, _ := render(t, manifests.KubeadmOverlay)
	for _, u := range append(unstructuredDocs(t, out), unstructuredDocs(t, kubeadmOut)...) {
		switch u.GetKind() {
		case "ConfigMap":
			config, _, _ = unstructured.NestedString(u.Object, "data", manifests.ConfigKey)
			continue
		case "Deployment", "Service":
			continue
		}
		if err := a.apply(ctx, u, false); err != nil {
			t.Fatalf("%s: %v", uid(u), err)
		}
		applied = append(applied, u)
	}

	for _, c := range []struct {
		user  user.Info
		lease string
	}{{sa, manifests.Name}, {manifests.KubeadmUser(), "kube-scheduler"}} {
		// The API server's RBAC authorizer reads informer caches: give it a
		// moment to see the new bindings.
		var denied []manifests.Request
		_ = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			denied = nil
			for _, r := range manifests.SchedulerRequests(c.lease) {
				if !allowed(ctx, t, c.user, r) {
					denied = append(denied, r)
				}
			}
			return len(denied) == 0, nil
		})
		for _, r := range denied {
			t.Errorf("API server: %s may not %s", c.user.GetName(), r)
		}
		for _, r := range manifests.ForbiddenRequests() {
			if c.user.GetName() == user.KubeScheduler && r.Resource == "leases" && r.Namespace == manifests.Namespace {
				continue // the bootstrap policy gives that user every lease of kube-system
			}
			if allowed(ctx, t, c.user, r) {
				t.Errorf("API server: %s may %s, and should not", c.user.GetName(), r)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// The scheduler as the ServiceAccount.
	dir := filepath.Join(framework.RepoRoot(), ".cache", "e2e", "logs", dnsName(t.Name()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig-serviceaccount")
	raw, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range raw.AuthInfos {
		ai.Impersonate, ai.ImpersonateGroups = sa.GetName(), sa.GetGroups()
	}
	if err := clientcmd.WriteToFile(*raw, kubeconfig); err != nil {
		t.Fatal(err)
	}
	overlayConfig := filepath.Join(dir, "overlay-config.yaml")
	if err := os.WriteFile(overlayConfig, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := framework.LoadSchedulerConfig(overlayConfig)
	if err != nil {
		t.Fatal(err)
	}
	configPath := filepath.Join(dir, "config.yaml")
	if err := cfg.SetKubeconfig(kubeconfig).AddInsecureRegistries(env.Public.PushHost, env.Private.PushHost).Write(configPath); err != nil {
		t.Fatal(err)
	}
	binary := os.Getenv("ARCHFILTER_SCHEDULER_BINARY")
	if binary == "" {
		binary = filepath.Join(framework.RepoRoot(), "bin", "archfilter-scheduler")
	}
	s, err := framework.StartScheduler(context.WithoutCancel(ctx), binary, configPath, dir, "serviceaccount",
		"--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("scheduler log (%s):\n%s", s.LogPath, s.Tail(40))
		}
	})
	if _, err := framework.WaitLeader(ctx, time.Minute, s); err != nil {
		t.Fatal(err)
	}
	const n = 4
	apply(ctx, t, ns, framework.Workload{Name: "private", Image: framework.ImagePrivate, Replicas: n, SchedulerName: manifests.Name})
	if _, err := framework.WaitScheduled(ctx, env.Client, ns, "", n, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	checkPlacement(ctx, t, ns, "", framework.ImagePrivate)

	// The secure port: probes anonymous, metrics for authorized clients.
	restCfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := rest.TLSConfigFor(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	admin.RootCAs, admin.InsecureSkipVerify = nil, true // the scheduler's self-signed serving certificate
	anonymous := &tls.Config{InsecureSkipVerify: true}
	base := fmt.Sprintf("https://127.0.0.1:%d", s.Port)
	for _, c := range []struct {
		path   string
		tls    *tls.Config
		status int
		body   string
	}{
		{"/readyz", anonymous, http.StatusOK, "ok"},
		{"/livez", anonymous, http.StatusOK, "ok"},
		{"/metrics", anonymous, http.StatusForbidden, ""},
		{"/metrics", admin, http.StatusOK, "archfilter_pods_held_total"},
	} {
		status, body, err := get(ctx, base+c.path, c.tls)
		if err != nil {
			t.Errorf("GET %s: %v", c.path, err)
			continue
		}
		if status != c.status || !strings.Contains(body, c.body) {
			t.Errorf("GET %s: %d, want %d with %q; body starts %.200q", c.path, status, c.status, c.body, body)
		}
	}
	for _, bad := range []string{"forbidden", "Unable to get configmap"} {
		if s.LogContains(bad) {
			t.Errorf("the scheduler logged %q: a permission is missing (log: %s)", bad, s.LogPath)
		}
	}
}

func get(ctx context.Context, url string, tlsConfig *tls.Config) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// TestManifestsPodSecurity is cmd/scheduler's test of the same name on
// kustomize's output of the base and every overlay: each workload runs
// hardened (test/manifests/podsecurity) and the check catches every field
// taken away from every container.
func TestManifestsPodSecurity(t *testing.T) {
	for dir, want := range manifests.OverlayWorkloads {
		t.Run(dir, func(t *testing.T) {
			_, objs := render(t, dir)
			if err := manifests.CheckPodSecurity(objs, want); err != nil {
				t.Error(err)
			}
		})
	}
}
