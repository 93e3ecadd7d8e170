package framework

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Kind runs the suite on a multi-node kind cluster (needs a Docker engine,
// kind, kubectl and htpasswd; it cannot run on machines without Docker). It
//   - creates cluster $E2E_KIND_CLUSTER (default archfilter-e2e): one control
//     plane and three workers, relabelled kubernetes.io/arch amd64, arm64 and
//     s390x (the containers still run amd64: scheduling is what is tested);
//   - runs two registry:2 containers on the kind network: anonymous
//     (127.0.0.1:5011 → archfilter-e2e-registry:5000) and htpasswd-protected
//     (127.0.0.1:5012 → archfilter-e2e-registry-private:5000);
//   - builds the image (make image), `kind load docker-image`s it, and deploys
//     the kustomize overlay $E2E_KIND_KUSTOMIZE (default
//     test/e2e/testdata/kind-overlay: manifests/overlays/secondary plus the
//     e2e registries marked insecure) with the e2e image. The overlay's
//     ArchFilter args must list archfilter-e2e-registry:5000 and
//     archfilter-e2e-registry-private:5000 with insecure: true (plain HTTP).
//
// Scheduler groups are that Deployment ($E2E_KIND_DEPLOYMENT, default
// kube-system/archfilter-scheduler): Crash deletes the leader's pod,
// Restart rolls the Deployment.
type Kind struct {
	Root string
}

const (
	kindRegistry        = "archfilter-e2e-registry"
	kindPrivateRegistry = "archfilter-e2e-registry-private"
	kindImage           = "archfilter/archfilter-scheduler:e2e"
)

func (k *Kind) cluster() string { return envOr("E2E_KIND_CLUSTER", "archfilter-e2e") }

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// Name implements Provider.
func (k *Kind) Name() string { return "kind" }

// kindNodes are the workers' platforms (kind names them <cluster>-worker, -worker2, ...).
var kindNodes = []NodeSpec{{OS: "linux", Arch: "amd64"}, {OS: "linux", Arch: "arm64"}, {OS: "linux", Arch: "s390x"}}

// Up implements Provider.
func (k *Kind) Up(ctx context.Context) (*Env, error) {
	for _, tool := range []string{"docker", "kind", "kubectl", "htpasswd"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("the kind provider needs %s on PATH (and a running Docker engine)", tool)
		}
	}
	dir := filepath.Join(k.Root, ".cache", "e2e-kind")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cluster := k.cluster()

	// 1. Cluster.
	if out, _ := run(ctx, k.Root, nil, "kind", "get", "clusters"); !containsLine(out, cluster) {
		cfg := filepath.Join(dir, "kind.yaml")
		if err := os.WriteFile(cfg, []byte("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: control-plane\n- role: worker\n- role: worker\n- role: worker\n"), 0o644); err != nil {
			return nil, err
		}
		if _, err := run(ctx, k.Root, nil, "kind", "create", "cluster", "--name", cluster, "--config", cfg, "--kubeconfig", kubeconfig, "--wait", "2m"); err != nil {
			return nil, err
		}
	} else if _, err := run(ctx, k.Root, nil, "kind", "export", "kubeconfig", "--name", cluster, "--kubeconfig", kubeconfig); err != nil {
		return nil, err
	}
	kubectl := func(args ...string) error {
		_, err := run(ctx, k.Root, nil, "kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
		return err
	}
	var nodes []NodeSpec
	for i, spec := range kindNodes {
		name := cluster + "-worker"
		if i > 0 {
			name += fmt.Sprint(i + 1)
		}
		spec.Name = name
		nodes = append(nodes, spec)
		if err := kubectl("label", "node", name, "--overwrite", LabelOS+"="+spec.OS, LabelArch+"="+spec.Arch); err != nil {
			return nil, err
		}
	}

	// 2. Registries on the kind network.
	htpasswd := filepath.Join(dir, "htpasswd")
	private := Registry{PushHost: "127.0.0.1:5012", PullHost: kindPrivateRegistry + ":5000", Username: "e2e", Password: "archfilter-e2e"}
	public := Registry{PushHost: "127.0.0.1:5011", PullHost: kindRegistry + ":5000"}
	if _, err := run(ctx, k.Root, nil, "sh", "-c", fmt.Sprintf("htpasswd -Bbn %s %s > %s", private.Username, private.Password, htpasswd)); err != nil {
		return nil, err
	}
	for _, r := range []struct {
		name, port string
		args       []string
	}{
		{kindRegistry, "5011", nil},
		{kindPrivateRegistry, "5012", []string{"-v", htpasswd + ":/auth/htpasswd:ro", "-e", "REGISTRY_AUTH=htpasswd",
			"-e", "REGISTRY_AUTH_HTPASSWD_REALM=e2e", "-e", "REGISTRY_AUTH_HTPASSWD_PATH=/auth/htpasswd"}},
	} {
		if out, _ := run(ctx, k.Root, nil, "docker", "ps", "-q", "--filter", "name=^"+r.name+"$"); strings.TrimSpace(out) != "" {
			continue
		}
		_, _ = run(ctx, k.Root, nil, "docker", "rm", "-f", r.name)
		args := append([]string{"run", "-d", "--restart=always", "--network", "kind", "--name", r.name, "-p", "127.0.0.1:" + r.port + ":5000"}, r.args...)
		if _, err := run(ctx, k.Root, nil, "docker", append(args, "registry:2")...); err != nil {
			return nil, err
		}
	}

	// 3. The scheduler image and the manifests.
	if _, err := run(ctx, k.Root, nil, "make", "image", "IMAGE="+strings.Split(kindImage, ":")[0], "VERSION=e2e"); err != nil {
		return nil, err
	}
	if _, err := run(ctx, k.Root, nil, "kind", "load", "docker-image", kindImage, "--name", cluster); err != nil {
		return nil, err
	}
	overlay, err := filepath.Abs(envOr("E2E_KIND_KUSTOMIZE", filepath.Join(k.Root, "test", "e2e", "testdata", "kind-overlay")))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(overlay, "kustomization.yaml")); err != nil {
		return nil, fmt.Errorf("kustomize overlay %s: %w (set E2E_KIND_KUSTOMIZE)", overlay, err)
	}
	// A kustomization of our own on top: the e2e image, and the kind-network
	// registries marked insecure (plain HTTP) in the ArchFilter args.
	kdir := filepath.Join(dir, "kustomize")
	if err := os.MkdirAll(kdir, 0o755); err != nil {
		return nil, err
	}
	ns, deploy := k.deployment()
	kustomization := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %s
images:
- name: archfilter/archfilter-scheduler
  newName: %s
  newTag: e2e
`, overlay, strings.Split(kindImage, ":")[0])
	if err := os.WriteFile(filepath.Join(kdir, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		return nil, err
	}
	if _, err := run(ctx, k.Root, nil, "sh", "-c", fmt.Sprintf(
		"kubectl kustomize --load-restrictor=LoadRestrictionsNone %s | kubectl --kubeconfig %s apply --server-side -f -", kdir, kubeconfig)); err != nil {
		return nil, err
	}
	if err := kubectl("-n", ns, "rollout", "status", "deployment/"+deploy, "--timeout=3m"); err != nil {
		return nil, err
	}
	cs, err := newClient(kubeconfig)
	if err != nil {
		return nil, err
	}
	return &Env{
		Provider:   k.Name(),
		Kubeconfig: kubeconfig,
		Client:     cs,
		Public:     public,
		Private:    private,
		Nodes:      nodes,
		Registries: dockerRegistries{root: k.Root},
		Schedulers: &deploymentLauncher{cs: cs, namespace: ns, name: deploy,
			schedulerName: envOr("E2E_KIND_SCHEDULER_NAME", "archfilter-scheduler"), lease: envOr("E2E_KIND_LEASE", "archfilter-scheduler")},
	}, nil
}

func (k *Kind) deployment() (namespace, name string) {
	ns, name, ok := strings.Cut(envOr("E2E_KIND_DEPLOYMENT", "kube-system/archfilter-scheduler"), "/")
	if !ok {
		return "kube-system", ns
	}
	return ns, name
}

// Down implements Provider; E2E_KEEP_CLUSTER=1 keeps the cluster.
func (k *Kind) Down(ctx context.Context) error {
	if os.Getenv("E2E_KEEP_CLUSTER") != "" {
		return nil
	}
	_, _ = run(ctx, k.Root, nil, "docker", "rm", "-f", kindRegistry, kindPrivateRegistry)
	_, err := run(ctx, k.Root, nil, "kind", "delete", "cluster", "--name", k.cluster())
	return err
}

// dockerRegistries stops and starts the registry containers.
type dockerRegistries struct{ root string }

func (r dockerRegistries) Stop(ctx context.Context) error {
	_, err := run(ctx, r.root, nil, "docker", "stop", kindRegistry, kindPrivateRegistry)
	return err
}

func (r dockerRegistries) Start(ctx context.Context) error {
	_, err := run(ctx, r.root, nil, "docker", "start", kindRegistry, kindPrivateRegistry)
	return err
}

func containsLine(out, line string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// deploymentLauncher hands out the deployed scheduler: scheduler names and
// lease timings are the manifests', LaunchOptions.Name and
// FastLeaderElection are ignored.
type deploymentLauncher struct {
	cs              kubernetes.Interface
	namespace, name string
	schedulerName   string
	lease           string
}

func (l *deploymentLauncher) Launch(ctx context.Context, o LaunchOptions) (Group, error) {
	if o.Replicas < 1 {
		o.Replicas = 1
	}
	g := &deploymentGroup{l: l, replicas: int32(o.Replicas)}
	if err := g.scale(ctx, g.replicas); err != nil {
		return nil, err
	}
	return g, nil
}

type deploymentGroup struct {
	l        *deploymentLauncher
	replicas int32
}

func (g *deploymentGroup) SchedulerName() string { return g.l.schedulerName }

func (g *deploymentGroup) scale(ctx context.Context, n int32) error {
	d, err := g.l.cs.AppsV1().Deployments(g.l.namespace).Get(ctx, g.l.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	d.Spec.Replicas = ptr.To(n)
	if _, err := g.l.cs.AppsV1().Deployments(g.l.namespace).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := g.l.cs.AppsV1().Deployments(g.l.namespace).Get(ctx, g.l.name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return d.Status.ReadyReplicas == n && d.Status.UpdatedReplicas == n && d.Status.Replicas == n, nil
	})
}

// Leader reads the lease: its holder identity is "<pod name>_<uuid>".
func (g *deploymentGroup) Leader(ctx context.Context, timeout time.Duration) (string, error) {
	var holder string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		lease, err := g.l.cs.CoordinationV1().Leases(g.l.namespace).Get(ctx, g.l.lease, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		holder = leaseHolderPod(lease)
		if holder == "" {
			return false, nil
		}
		_, err = g.l.cs.CoreV1().Pods(g.l.namespace).Get(ctx, holder, metav1.GetOptions{})
		return err == nil, nil
	})
	return holder, err
}

func leaseHolderPod(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	pod, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
	return pod
}

func (g *deploymentGroup) Crash(ctx context.Context, id string) error {
	return g.l.cs.CoreV1().Pods(g.l.namespace).Delete(ctx, id, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
}

func (g *deploymentGroup) Restart(ctx context.Context) error {
	d, err := g.l.cs.AppsV1().Deployments(g.l.namespace).Get(ctx, g.l.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if d.Spec.Template.Annotations == nil {
		d.Spec.Template.Annotations = map[string]string{}
	}
	d.Spec.Template.Annotations["archfilter.io/e2e-restarted-at"] = time.Now().Format(time.RFC3339Nano)
	if _, err := g.l.cs.AppsV1().Deployments(g.l.namespace).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return g.scale(ctx, g.replicas)
}

// Stop scales the Deployment to zero; the next Launch or Restart scales it up.
func (g *deploymentGroup) Stop(ctx context.Context) { _ = g.scale(ctx, 0) }

func (g *deploymentGroup) Logs() string {
	ns, name := g.l.namespace, g.l.name
	return fmt.Sprintf("(kubectl -n %s logs deployment/%s --all-containers --prefix)", ns, name)
}
