package charttest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// helmConfig is Helm's action configuration for the test cluster.
func helmConfig(t *testing.T, kubeconfig string) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	ns := Namespace
	flags.Namespace = &ns
	cacheDir := t.TempDir()
	flags.CacheDir = &cacheDir
	cfg := &action.Configuration{}
	if err := cfg.Init(flags, Namespace, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestInstallPlacement installs the placement mode alone with Helm's actions
// on the KWOK cluster, upgrades it, turns it off by an upgrade and uninstalls
// the release, leaving nothing gated.
//
// What KWOK can show, and what it cannot: its nodes run no containers, so
// neither the companion nor Helm's hook Jobs run here (make e2e-node runs
// both, from the companion's image, on a real kubelet). The API server does
// accept every object, the hooks' included (server-side dry run), the
// Deployment rolls out and rolls again on upgrade, and each hook's work is run
// for real: its Job's own command line (bin/archfilter-placement, the binary
// of the image) as the hook's ServiceAccount, with only the hook's RBAC, on
// what a running companion leaves behind (a gated pod, its webhook
// configuration, Lease and certificate Secret): helm uninstall's pre-delete
// hook (refused without its RBAC, naming what it was refused) and the
// post-upgrade hook an upgrade turning the mode off renders while the webhook
// configuration is still there. Then helm uninstall (hooks done) removes the rest.
func TestInstallPlacement(t *testing.T) {
	kubeconfig, restConfig := cluster(t)
	bin := repoPath("bin/archfilter-placement")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v: make test-chart builds it (make build-placement)", err)
	}
	ctx := t.Context()
	cfg := helmConfig(t, kubeconfig)
	chrt := loadChart(t)
	kube := kubernetes.NewForConfigOrDie(restConfig)
	const rel, name = "archfilter-placement-test", "afp-placement"

	install := action.NewInstall(cfg)
	install.ReleaseName = rel
	install.Namespace = Namespace
	install.Timeout = 2 * time.Minute
	install.Wait = true
	values := map[string]any{
		"fullnameOverride": "afp",
		"scheduler":        map[string]any{"enabled": false},
		"placement":        map[string]any{"enabled": true},
	}
	r, err := install.RunWithContext(ctx, chrt, values)
	if err != nil {
		t.Fatalf("helm install: %v", err)
	}
	t.Cleanup(func() {
		u := action.NewUninstall(cfg)
		u.DisableHooks = true
		_, _ = u.Run(rel)
	})
	if r.Info.Status != release.StatusDeployed {
		t.Fatalf("release status %s", r.Info.Status)
	}
	objs, err := decodeAll([]byte(r.Manifest))
	if err != nil {
		t.Fatal(err)
	}
	client := dynamicFor(t, restConfig)
	for _, o := range objs {
		if _, err := client.get(ctx, o); err != nil {
			t.Errorf("%s: %v", id(o), err)
		}
	}
	deployment := func() *appsv1.Deployment {
		d, err := kube.AppsV1().Deployments(Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := deployment(); d.Status.ReadyReplicas != 2 {
		t.Errorf("Deployment %s: %d ready replicas after helm install --wait, want 2", d.Name, d.Status.ReadyReplicas)
	}

	// Upgrade: another --max-gated and a replica more; the pods roll.
	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = Namespace
	upgrade.Timeout = 2 * time.Minute
	upgrade.Wait = true
	upgrade.ReuseValues = true
	r, err = upgrade.RunWithContext(ctx, rel, chrt, map[string]any{"placement": map[string]any{"maxGated": "90s", "replicas": 3}})
	if err != nil {
		t.Fatalf("helm upgrade: %v", err)
	}
	if d := deployment(); d.Status.ReadyReplicas != 3 || !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--max-gated=90s") {
		t.Errorf("after the upgrade: %d ready replicas, args %v; want 3 with --max-gated=90s", d.Status.ReadyReplicas, d.Spec.Template.Spec.Containers[0].Args)
	}
	upgraded, err := decodeAll([]byte(r.Manifest))
	if err != nil {
		t.Fatal(err)
	}

	// What a running companion leaves; then the hook helm uninstall runs.
	ns, pod := leaveGatedPod(ctx, t, kube, name)
	runHook(ctx, t, kube, restConfig, client, bin, r, release.HookPreDelete, true)
	checkRemoved(ctx, t, kube, name, ns, pod)

	// helm upgrade turning the mode off while its webhook configuration is
	// still there (a companion re-created it, say): the same removal runs as a
	// post-upgrade hook (Helm's hooks disabled here: KWOK runs no Job).
	ns, pod = leaveGatedPod(ctx, t, kube, name)
	upgrade.DisableHooks = true
	r, err = upgrade.RunWithContext(ctx, rel, chrt, map[string]any{"scheduler": map[string]any{"enabled": true}, "placement": map[string]any{"enabled": false}})
	if err != nil {
		t.Fatalf("helm upgrade turning the mode off: %v", err)
	}
	runHook(ctx, t, kube, restConfig, client, bin, r, release.HookPostUpgrade, false)
	checkRemoved(ctx, t, kube, name, ns, pod)
	scheduler, err := decodeAll([]byte(r.Manifest))
	if err != nil {
		t.Fatal(err)
	}
	upgraded = append(upgraded, scheduler...)

	// helm uninstall, its hook's work done above (KWOK cannot run its Job).
	u := action.NewUninstall(cfg)
	u.DisableHooks = true
	if _, err := u.Run(rel); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	for _, o := range append(objs, upgraded...) {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := client.get(ctx, o)
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
		if err != nil {
			t.Errorf("%s still there after helm uninstall: %v", id(o), err)
		}
	}
}

// runHook runs the removal hook of release r for event the way its Job would,
// honestly but without a container: every hook object is accepted by the API
// server (dry run), the Job's own command line (bin, the binary of the
// companion's image) runs as the hook's ServiceAccount with only the hook's
// RBAC, created for real. With refused, it first runs before that RBAC exists
// and must fail naming what it was refused.
func runHook(ctx context.Context, t *testing.T, kube kubernetes.Interface, restConfig *rest.Config, client *dynamicClient, bin string, r *release.Release, event release.HookEvent, refused bool) {
	t.Helper()
	var hooks []k8sruntime.Object
	for _, h := range r.Hooks {
		if !slices.Contains(h.Events, event) {
			continue
		}
		o, err := decodeAll([]byte(h.Manifest))
		if err != nil || len(o) != 1 {
			t.Fatalf("hook %s: %v", h.Path, err)
		}
		hooks = append(hooks, o[0])
		if err := client.create(ctx, o[0], true); err != nil {
			t.Errorf("hook %s refused by the API server (dry run): %v", id(o[0]), err)
		}
	}
	if len(hooks) == 0 {
		t.Fatalf("the release has no %s hook", event)
	}
	job := one[*batchv1.Job](t, hooks)
	args := job.Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--remove-gates") {
		t.Fatalf("the %s hook runs %v, not --remove-gates", event, args)
	}
	sa := job.Spec.Template.Spec.ServiceAccountName
	if _, err := kube.CoreV1().ServiceAccounts(Namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = kube.CoreV1().ServiceAccounts(Namespace).Delete(context.Background(), sa, metav1.DeleteOptions{})
	}()
	asHook := tokenKubeconfig(ctx, t, kube, restConfig, sa)
	if refused {
		out, err := exec.CommandContext(ctx, bin, append(slices.Clone(args), "--kubeconfig", asHook)...).CombinedOutput()
		if err == nil {
			t.Fatalf("the hook's command succeeded without its RBAC:\n%s", out)
		}
		if !strings.Contains(string(out), "forbidden") || !strings.Contains(string(out), "--stop-deployment") {
			t.Errorf("the refused hook does not say what it was refused:\n%s", out)
		}
	}
	for _, o := range hooks {
		switch o.(type) {
		case *batchv1.Job, *corev1.ServiceAccount:
			continue
		}
		if err := client.create(ctx, o, false); err != nil {
			t.Fatalf("hook %s: %v", id(o), err)
		}
		defer func() { _ = client.delete(context.Background(), o) }()
	}
	start := time.Now()
	var out []byte
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		// RBAC takes a moment to reach the authorizer's cache.
		var err error
		out, err = exec.CommandContext(ctx, bin, append(slices.Clone(args), "--kubeconfig", asHook)...).CombinedOutput()
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("the %s hook's command (%s) as %s: %v\n%s", event, strings.Join(args, " "), sa, err, out)
	}
	t.Logf("the %s hook's command ran in %v", event, time.Since(start).Round(100*time.Millisecond))
}

// checkRemoved: nothing of the companion name is left running or gating.
func checkRemoved(ctx context.Context, t *testing.T, kube kubernetes.Interface, name, ns, pod string) {
	t.Helper()
	if d, err := kube.AppsV1().Deployments(Namespace).Get(ctx, name, metav1.GetOptions{}); err == nil && ptr.Deref(d.Spec.Replicas, 1) != 0 {
		t.Errorf("the companion's Deployment has %d replicas after the hook, want 0", *d.Spec.Replicas)
	}
	pods, err := kube.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("companion pods left after the hook: %d (%v)", len(pods.Items), err)
	}
	got, err := kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []corev1.PodSchedulingGate{{Name: "example.com/other"}}; !slices.Equal(got.Spec.SchedulingGates, want) {
		t.Errorf("gates after the hook %v, want %v (only the mode's removed)", got.Spec.SchedulingGates, want)
	}
	for what, get := range map[string]func() error{
		"MutatingWebhookConfiguration": func() error {
			_, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
			return err
		},
		"Lease": func() error {
			_, err := kube.CoordinationV1().Leases(Namespace).Get(ctx, name, metav1.GetOptions{})
			return err
		},
		"certificate Secret": func() error {
			_, err := kube.CoreV1().Secrets(Namespace).Get(ctx, name+"-tls", metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); !apierrors.IsNotFound(err) {
			t.Errorf("%s after the hook: %v, want NotFound", what, err)
		}
	}
}

// leaveGatedPod creates what a running companion named name leaves: a pod
// carrying its gate (and another's), its webhook configuration, its Lease and
// the certificate Secret it wrote. It returns the pod's namespace and name.
func leaveGatedPod(ctx context.Context, t *testing.T, kube kubernetes.Interface, name string) (string, string) {
	t.Helper()
	ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "placement-uninstall-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gated", Namespace: ns.Name},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "example.com/other"}, {Name: placementGate}},
			Containers:      []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1"}},
		},
	}
	if _, err := kube.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ignore, none := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone
	webhook := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "placement.archfilter.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: Namespace, Name: name, Path: ptr.To("/mutate"), Port: ptr.To[int32](443)}},
			FailurePolicy:           &ignore,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			// No pod of the test is sent to it (KWOK runs no companion).
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"example.com/none": "none"}},
		}},
	}
	if _, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, webhook, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("")}}
	if _, err := kube.CoordinationV1().Leases(Namespace).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-tls", Namespace: Namespace, Labels: map[string]string{"app.kubernetes.io/managed-by": "archfilter-placement"}},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: []byte("c"), corev1.TLSPrivateKeyKey: []byte("k")},
	}
	if _, err := kube.CoreV1().Secrets(Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns.Name, pod.Name
}

// tokenKubeconfig writes a kubeconfig for the ServiceAccount sa of Namespace
// (a token from the TokenRequest API), the way its pod would authenticate.
func tokenKubeconfig(ctx context.Context, t *testing.T, kube kubernetes.Interface, restConfig *rest.Config, sa string) string {
	t.Helper()
	tok, err := kube.CoreV1().ServiceAccounts(Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ca := restConfig.CAData
	if len(ca) == 0 && restConfig.CAFile != "" {
		if ca, err = os.ReadFile(restConfig.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: restConfig.Host, CertificateAuthorityData: ca, InsecureSkipTLSVerify: len(ca) == 0}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "sa"}
	cfg.CurrentContext = "c"
	f := filepath.Join(t.TempDir(), "hook.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, f); err != nil {
		t.Fatal(err)
	}
	return f
}

func (c *dynamicClient) create(ctx context.Context, o k8sruntime.Object, dryRun bool) error {
	u, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: u}
	gvk := o.GetObjectKind().GroupVersionKind()
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return err
	}
	opts := metav1.CreateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	res := c.dyn.Resource(mapping.Resource)
	if ns := obj.GetNamespace(); ns != "" {
		_, err = res.Namespace(ns).Create(ctx, obj, opts)
	} else {
		_, err = res.Create(ctx, obj, opts)
	}
	return err
}

func (c *dynamicClient) delete(ctx context.Context, o k8sruntime.Object) error {
	gvk := o.GetObjectKind().GroupVersionKind()
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return err
	}
	u, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: u}
	res := c.dyn.Resource(mapping.Resource)
	if ns := obj.GetNamespace(); ns != "" {
		return res.Namespace(ns).Delete(ctx, obj.GetName(), metav1.DeleteOptions{})
	}
	return res.Delete(ctx, obj.GetName(), metav1.DeleteOptions{})
}
