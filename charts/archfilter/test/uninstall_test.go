package charttest

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// schedulerHooks are the hooks of rel that remove the scheduler named name
// (its fullname): everything named name+"-uninstall", with their events.
func schedulerHooks(t *testing.T, rel *release.Release, name string) ([]k8sruntime.Object, map[string][]release.HookEvent, map[string]string) {
	t.Helper()
	var hooks []k8sruntime.Object
	events := map[string][]release.HookEvent{}
	weights := map[string]string{}
	for _, h := range rel.Hooks {
		o, err := decodeAll([]byte(h.Manifest))
		if err != nil || len(o) != 1 {
			t.Fatalf("hook %s: %v (%d objects)", h.Path, err, len(o))
		}
		m, ok := o[0].(metav1.Object)
		if !ok {
			t.Fatalf("hook %s: no metadata", h.Path)
		}
		if m.GetName() != name+"-uninstall" && m.GetName() != name+"-uninstall:lease" {
			continue
		}
		hooks = append(hooks, o[0])
		events[id(o[0])] = h.Events
		weights[id(o[0])] = m.GetAnnotations()["helm.sh/hook-weight"]
	}
	return hooks, events, weights
}

// rulesOf is every rule of the hook's Roles and ClusterRoles, by role.
func rulesOf(objs []k8sruntime.Object) map[string][]rbacv1.PolicyRule {
	rules := map[string][]rbacv1.PolicyRule{}
	for _, r := range of[*rbacv1.ClusterRole](objs) {
		rules[id(r)] = r.Rules
	}
	for _, r := range of[*rbacv1.Role](objs) {
		rules[id(r)] = r.Rules
	}
	return rules
}

// TestRenderSchedulerUninstall: helm uninstall's scheduler hook runs
// `archfilter-scheduler pre-uninstall` from the scheduler's image, before the
// placement mode's hook, with RBAC of its own that grants what it does and no
// more: list pods, get and patch (scale) the scheduler's Deployment, delete its
// lease, or, where the lease is the control plane's (replacement mode), read it.
func TestRenderSchedulerUninstall(t *testing.T) {
	appVersion := loadChart(t).Metadata.AppVersion
	const hookName = "archfilter-scheduler-uninstall"
	deploymentRule := rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{"archfilter-scheduler"}, Verbs: []string{"get", "patch"}}
	podsRule := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}
	leaseRule := func(name, verb string) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{name}, Verbs: []string{verb}}}
	}
	withLease := func(ns string) []string {
		return []string{
			"ClusterRole " + hookName, "ClusterRoleBinding " + hookName, "Job kube-system/" + hookName,
			"Role kube-system/" + hookName, "Role " + ns + "/" + hookName + ":lease",
			"RoleBinding kube-system/" + hookName, "RoleBinding " + ns + "/" + hookName + ":lease", "ServiceAccount kube-system/" + hookName,
		}
	}
	for _, tc := range []struct {
		name, values string
		// The hook's objects; nil: none.
		want []string
		// args: the Job's arguments after pre-uninstall.
		args  []string
		env   []corev1.EnvVar
		rules map[string][]rbacv1.PolicyRule
	}{
		{
			name: "secondary: refuses while pods name it, deletes its lease",
			want: withLease("kube-system"),
			args: []string{"--scheduler-name=archfilter-scheduler", "--namespace=kube-system", "--deployment=archfilter-scheduler",
				"--lease=kube-system/archfilter-scheduler",
				"--how-to-force=To remove it anyway: helm upgrade archfilter CHART -n kube-system --reuse-values --set scheduler.uninstall.force=true, " +
					"then helm uninstall again; or helm uninstall --no-hooks, then kubectl -n kube-system delete lease archfilter-scheduler"},
			rules: map[string][]rbacv1.PolicyRule{
				"ClusterRole " + hookName:                 {podsRule},
				"Role kube-system/" + hookName:            {deploymentRule},
				"Role kube-system/" + hookName + ":lease": leaseRule("archfilter-scheduler", "delete"),
			},
		},
		{
			name:   "replacement: the control plane's lease, read only",
			values: "mode: replacement",
			want:   withLease("kube-system"),
			args: []string{"--scheduler-name=default-scheduler", "--namespace=kube-system", "--deployment=archfilter-scheduler",
				"--lease=kube-system/kube-scheduler", "--lease-shared",
				"--how-to-force=To remove it anyway: helm upgrade archfilter CHART -n kube-system --reuse-values --set scheduler.uninstall.force=true, " +
					"then helm uninstall again; or helm uninstall --no-hooks"},
			rules: map[string][]rbacv1.PolicyRule{
				"ClusterRole " + hookName:                 {podsRule},
				"Role kube-system/" + hookName:            {deploymentRule},
				"Role kube-system/" + hookName + ":lease": leaseRule("kube-scheduler", "get"),
			},
		},
		{
			name:   "forced, a lease of its own elsewhere, and the placement mode beside it",
			values: "scheduler: {uninstall: {force: true}}\nleaderElection: {resourceName: arch, resourceNamespace: leases}\nplacement: {enabled: true}",
			want:   withLease("leases"),
			args: []string{"--scheduler-name=archfilter-scheduler", "--namespace=kube-system", "--deployment=archfilter-scheduler",
				"--lease=leases/arch", "--force",
				"--how-to-force=To remove it anyway: helm upgrade archfilter CHART -n kube-system --reuse-values --set scheduler.uninstall.force=true, " +
					"then helm uninstall again (helm uninstall --no-hooks would also skip the placement mode's removal, leaving pods gated)"},
			rules: map[string][]rbacv1.PolicyRule{
				"ClusterRole " + hookName:            {podsRule},
				"Role kube-system/" + hookName:       {deploymentRule},
				"Role leases/" + hookName + ":lease": leaseRule("arch", "delete"),
			},
		},
		{
			name:   "the scheduler's environment",
			values: "env: [{name: KUBERNETES_SERVICE_HOST, value: 192.0.2.1}]",
			want:   withLease("kube-system"),
			args: []string{"--scheduler-name=archfilter-scheduler", "--namespace=kube-system", "--deployment=archfilter-scheduler",
				"--lease=kube-system/archfilter-scheduler",
				"--how-to-force=To remove it anyway: helm upgrade archfilter CHART -n kube-system --reuse-values --set scheduler.uninstall.force=true, " +
					"then helm uninstall again; or helm uninstall --no-hooks, then kubectl -n kube-system delete lease archfilter-scheduler"},
			env: []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "192.0.2.1"}},
			rules: map[string][]rbacv1.PolicyRule{
				"ClusterRole " + hookName:                 {podsRule},
				"Role kube-system/" + hookName:            {deploymentRule},
				"Role kube-system/" + hookName + ":lease": leaseRule("archfilter-scheduler", "delete"),
			},
		},
		{
			name:   "without leader election: no lease",
			values: "replicas: 1\nleaderElection: {enabled: false}",
			want: []string{"ClusterRole " + hookName, "ClusterRoleBinding " + hookName, "Job kube-system/" + hookName,
				"Role kube-system/" + hookName, "RoleBinding kube-system/" + hookName, "ServiceAccount kube-system/" + hookName},
			args: []string{"--scheduler-name=archfilter-scheduler", "--namespace=kube-system", "--deployment=archfilter-scheduler",
				"--how-to-force=To remove it anyway: helm upgrade archfilter CHART -n kube-system --reuse-values --set scheduler.uninstall.force=true, " +
					"then helm uninstall again; or helm uninstall --no-hooks"},
			rules: map[string][]rbacv1.PolicyRule{"ClusterRole " + hookName: {podsRule}, "Role kube-system/" + hookName: {deploymentRule}},
		},
		{
			name:   "placement alone: no scheduler to remove",
			values: "scheduler: {enabled: false}\nplacement: {enabled: true}",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var values map[string]any
			if err := yaml.Unmarshal([]byte(tc.values), &values); err != nil {
				t.Fatal(err)
			}
			rel, err := dryRun(t, values, renderOpts{})
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			hooks, events, weights := schedulerHooks(t, rel, "archfilter-scheduler")
			if diff := gocmp.Diff(tc.want, objectIDs(hooks)); diff != "" {
				t.Fatalf("hooks (-want,+got):\n%s", diff)
			}
			if tc.want == nil {
				return
			}
			objs, err := decodeAll([]byte(rel.Manifest))
			if err != nil {
				t.Fatal(err)
			}
			var scheduler *appsv1.Deployment
			for _, d := range of[*appsv1.Deployment](objs) {
				if d.Name == "archfilter-scheduler" {
					scheduler = d
				}
			}
			for _, o := range hooks {
				if ev := events[id(o)]; !slices.Equal(ev, []release.HookEvent{release.HookPreDelete}) {
					t.Errorf("%s: hook events %v, want pre-delete only", id(o), ev)
				}
				// Before the placement mode's hook (-10, its Job 0): a refusal
				// leaves that mode as it was.
				want := "-20"
				if _, ok := o.(*batchv1.Job); ok {
					want = "-15"
				}
				if weights[id(o)] != want {
					t.Errorf("%s: hook weight %q, want %s", id(o), weights[id(o)], want)
				}
			}
			job := one[*batchv1.Job](t, hooks)
			if job.Annotations["helm.sh/hook-output-log-policy"] != "hook-failed" || job.Annotations["helm.sh/hook-delete-policy"] != "before-hook-creation,hook-succeeded" {
				t.Errorf("Job annotations %v: want its log printed on failure, kept on failure", job.Annotations)
			}
			if job.Spec.ActiveDeadlineSeconds == nil || *job.Spec.ActiveDeadlineSeconds != 240 || ptr.Deref(job.Spec.BackoffLimit, 6) != 0 {
				t.Errorf("Job deadline %v, backoffLimit %v; want 240 and 0 (a refusal answers the same again)", job.Spec.ActiveDeadlineSeconds, job.Spec.BackoffLimit)
			}
			p := job.Spec.Template.Spec
			c := p.Containers[0]
			if want := "archfilter/archfilter-scheduler:" + appVersion; c.Image != want || c.Image != scheduler.Spec.Template.Spec.Containers[0].Image {
				t.Errorf("hook image %q, want the scheduler's %q", c.Image, want)
			}
			if diff := gocmp.Diff(append([]string{"pre-uninstall"}, tc.args...), c.Args); diff != "" {
				t.Errorf("hook args (-want,+got):\n%s", diff)
			}
			if diff := gocmp.Diff(tc.env, c.Env); diff != "" {
				t.Errorf("hook env, the scheduler's (-want,+got):\n%s", diff)
			}
			if p.ServiceAccountName != hookName || p.RestartPolicy != corev1.RestartPolicyNever {
				t.Errorf("hook pod: serviceAccount %q restartPolicy %s", p.ServiceAccountName, p.RestartPolicy)
			}
			// The hook waits for the Deployment's pods to go: its own must not be one.
			sel, err := metav1.LabelSelectorAsSelector(scheduler.Spec.Selector)
			if err != nil {
				t.Fatal(err)
			}
			if sel.Matches(labels.Set(job.Spec.Template.Labels)) {
				t.Errorf("the hook's pod labels %v match the scheduler's selector %s", job.Spec.Template.Labels, sel)
			}
			if diff := gocmp.Diff(tc.rules, rulesOf(hooks)); diff != "" {
				t.Errorf("hook RBAC (-want,+got):\n%s", diff)
			}
			for _, b := range of[*rbacv1.RoleBinding](hooks) {
				if s := b.Subjects[0]; s.Name != hookName || s.Namespace != Namespace || b.RoleRef.Name != b.Name {
					t.Errorf("RoleBinding %s binds %s/%s to %s", id(b), s.Namespace, s.Name, b.RoleRef.Name)
				}
			}
		})
	}
}

// hookCommand creates the hook's RBAC of rel (named name+"-uninstall") for
// real, and its ServiceAccount, after the API server accepted every hook
// object (dry run), and returns its Job's command line with a kubeconfig of
// that ServiceAccount: the Job's work, without a container (KWOK runs none).
func hookCommand(ctx context.Context, t *testing.T, kube kubernetes.Interface, restConfig *rest.Config, client *dynamicClient, rel *release.Release, name string) []string {
	t.Helper()
	hooks, _, _ := schedulerHooks(t, rel, name)
	if len(hooks) == 0 {
		t.Fatalf("release %s has no scheduler uninstall hook", rel.Name)
	}
	// A revision's hook replaces the last one's, as Helm's
	// before-hook-creation does.
	for _, o := range hooks {
		_ = client.delete(ctx, o)
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := client.get(ctx, o)
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Fatalf("the last revision's hook %s is still there: %v", id(o), err)
		}
	}
	for _, o := range hooks {
		if err := client.create(ctx, o, true); err != nil {
			t.Errorf("hook %s refused by the API server (dry run): %v", id(o), err)
		}
	}
	job := one[*batchv1.Job](t, hooks)
	sa := job.Spec.Template.Spec.ServiceAccountName
	if _, err := kube.CoreV1().ServiceAccounts(Namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().ServiceAccounts(Namespace).Delete(context.Background(), sa, metav1.DeleteOptions{})
	})
	for _, o := range hooks {
		switch o.(type) {
		case *batchv1.Job, *corev1.ServiceAccount:
			continue
		}
		if err := client.create(ctx, o, false); err != nil {
			t.Fatalf("hook %s: %v", id(o), err)
		}
		t.Cleanup(func() { _ = client.delete(context.Background(), o) })
	}
	return append(slices.Clone(job.Spec.Template.Spec.Containers[0].Args), "--kubeconfig", tokenKubeconfig(ctx, t, kube, restConfig, sa))
}

// runHookCommand runs the scheduler's binary with args until its RBAC has
// reached the authorizer (no "forbidden" in its output) and returns what it
// printed and its error.
func runHookCommand(ctx context.Context, t *testing.T, bin string, args []string) (string, error) {
	t.Helper()
	var out []byte
	var runErr error
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		out, runErr = exec.CommandContext(ctx, bin, args...).CombinedOutput()
		return !strings.Contains(string(out), "forbidden"), nil
	})
	if err != nil {
		t.Fatalf("the hook's command (%s) is still forbidden: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), runErr
}

// TestInstallSchedulerUninstall installs the scheduler with Helm's actions on
// the KWOK cluster and runs its uninstall hook's work for real: the Job's
// command line (bin/archfilter-scheduler, the binary of the image) as the
// hook's ServiceAccount, with only the hook's RBAC. Secondary: refused while a
// pod names the scheduler (named in the refusal, with how to force), then,
// without it, the Deployment stopped and the lease deleted. Replacement (by
// upgrade): the cluster's own kube-scheduler holds and renews
// kube-system/kube-scheduler, so the default profile is served; the
// Deployment stopped, that lease kept. Then helm uninstall, hooks on (KWOK
// completes a Job's pods without running them), removes everything.
func TestInstallSchedulerUninstall(t *testing.T) {
	kubeconfig, restConfig := cluster(t)
	bin := repoPath("bin/archfilter-scheduler")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v: make test-chart builds it (make build-main)", err)
	}
	ctx := t.Context()
	cfg := helmConfig(t, kubeconfig)
	chrt := loadChart(t)
	kube := kubernetes.NewForConfigOrDie(restConfig)
	client := dynamicFor(t, restConfig)
	const rel, name = "archfilter-uninstall-test", "afu"

	install := action.NewInstall(cfg)
	install.ReleaseName = rel
	install.Namespace = Namespace
	install.Timeout = 2 * time.Minute
	install.Wait = true
	r, err := install.RunWithContext(ctx, chrt, map[string]any{"fullnameOverride": name})
	if err != nil {
		t.Fatalf("helm install: %v", err)
	}
	t.Cleanup(func() {
		u := action.NewUninstall(cfg)
		u.DisableHooks = true
		_, _ = u.Run(rel)
	})
	replicas := func() int32 {
		d, err := kube.AppsV1().Deployments(Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return ptr.Deref(d.Spec.Replicas, 1)
	}

	// A pod that names the scheduler: refused, nothing touched.
	ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "scheduler-uninstall-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "waiting", Namespace: ns.Name},
		Spec:       corev1.PodSpec{SchedulerName: name, Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1"}}},
	}
	if _, err := kube.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("")}}
	if _, err := kube.CoordinationV1().Leases(Namespace).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	args := hookCommand(ctx, t, kube, restConfig, client, r, name)
	out, err := runHookCommand(ctx, t, bin, args)
	if err == nil {
		t.Fatalf("the hook succeeded while a pod names the scheduler:\n%s", out)
	}
	for _, w := range []string{"1 pod(s) still name spec.schedulerName afu (1 Pending): " + ns.Name + "/waiting (Pending)",
		"helm upgrade " + rel + " CHART -n " + Namespace + " --reuse-values --set scheduler.uninstall.force=true"} {
		if !strings.Contains(out, w) {
			t.Errorf("the refusal does not say %q:\n%s", w, out)
		}
	}
	if got := replicas(); got != 2 {
		t.Errorf("after the refusal the Deployment has %d replicas, want 2", got)
	}
	if _, err := kube.CoordinationV1().Leases(Namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Errorf("after the refusal, the Lease: %v", err)
	}

	// Without it: stopped, the lease deleted.
	if err := kube.CoreV1().Pods(ns.Name).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Pods(ns.Name).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s not gone: %v", ns.Name, pod.Name, err)
	}
	if out, err = runHookCommand(ctx, t, bin, args); err != nil {
		t.Fatalf("the hook without pods naming the scheduler: %v\n%s", err, out)
	}
	if got := replicas(); got != 0 {
		t.Errorf("after the hook the Deployment has %d replicas, want 0", got)
	}
	pods, err := kube.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("scheduler pods left after the hook: %d (%v)", len(pods.Items), err)
	}
	if _, err := kube.CoordinationV1().Leases(Namespace).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Lease after the hook: %v, want NotFound", err)
	}
	t.Logf("secondary: %s", out)

	// Replacement: the cluster's kube-scheduler serves the default profile.
	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = Namespace
	upgrade.Timeout = 2 * time.Minute
	upgrade.Wait = true
	upgrade.ReuseValues = true
	r, err = upgrade.RunWithContext(ctx, rel, chrt, map[string]any{"mode": "replacement", "replicas": 2})
	if err != nil {
		t.Fatalf("helm upgrade: %v", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return replicas() == 2, nil
	})
	if err != nil {
		t.Fatalf("the upgrade did not scale the Deployment back to 2: %d", replicas())
	}
	before, err := kube.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the cluster's kube-scheduler holds no lease: %v", err)
	}
	args = hookCommand(ctx, t, kube, restConfig, client, r, name)
	if out, err = runHookCommand(ctx, t, bin, args); err != nil {
		t.Fatalf("the replacement hook, with the cluster's kube-scheduler holding its lease: %v\n%s", err, out)
	}
	if !strings.Contains(out, ptr.Deref(before.Spec.HolderIdentity, "")+" holds the Lease kube-system/kube-scheduler and renews it") {
		t.Errorf("the hook does not name the cluster's kube-scheduler (%s) as the new holder:\n%s", ptr.Deref(before.Spec.HolderIdentity, ""), out)
	}
	if got := replicas(); got != 0 {
		t.Errorf("after the hook the Deployment has %d replicas, want 0", got)
	}
	if _, err := kube.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{}); err != nil {
		t.Errorf("the control plane's lease after the hook: %v, want kept", err)
	}
	t.Logf("replacement: %s", out)

	// helm uninstall with its hooks.
	objs, err := decodeAll([]byte(r.Manifest))
	if err != nil {
		t.Fatal(err)
	}
	u := action.NewUninstall(cfg)
	u.Timeout = 2 * time.Minute
	if _, err := u.Run(rel); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	hooks, _, _ := schedulerHooks(t, r, name)
	for _, o := range append(objs, hooks...) {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := client.get(ctx, o)
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("%s still there after helm uninstall: %v", id(o), err)
		}
	}
}
