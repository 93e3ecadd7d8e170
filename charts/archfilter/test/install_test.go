package charttest

import (
	"context"
	"os"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/archfilter/archfilter/test/manifests/objects"
)

// kubeconfigEnv names the cluster the install test uses: make test-chart
// brings up a KWOK cluster (real etcd, kube-apiserver and
// kube-controller-manager; hack/cluster/up.sh) and sets it.
const kubeconfigEnv = "ARCHFILTER_CHART_KUBECONFIG"

// cluster returns the kubeconfig of the test cluster and its client
// configuration; without one (plain go test) the test is skipped.
func cluster(t *testing.T) (string, *rest.Config) {
	t.Helper()
	kubeconfig := os.Getenv(kubeconfigEnv)
	if kubeconfig == "" {
		t.Skipf("%s is not set: `make test-chart` runs this test on a local KWOK cluster", kubeconfigEnv)
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return kubeconfig, restConfig
}

// TestInstall installs the chart with Helm's install action against a real
// API server, with every optional object on (the cluster serves
// monitoring.coreos.com/v1 through stand-in CRDs), waits for the Deployment
// to roll out on the cluster's fake nodes, checks the API server accepted and
// stored each rendered object, upgrades it to the k8s1.35 flavour in
// replacement mode, and uninstalls it, leaving nothing behind.
func TestInstall(t *testing.T) {
	kubeconfig, restConfig := cluster(t)
	ctx := t.Context()
	installMonitoringCRDs(ctx, t, restConfig)

	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	ns := Namespace
	flags.Namespace = &ns
	// A fresh discovery cache: Helm must see the CRDs just created.
	cacheDir := t.TempDir()
	flags.CacheDir = &cacheDir
	cfg := &action.Configuration{}
	if err := cfg.Init(flags, Namespace, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	chrt := loadChart(t)
	const name = "archfilter-install-test"

	values := map[string]any{
		"fullnameOverride": "archfilter-install-test",
		"networkPolicy":    map[string]any{"enabled": true, "apiServer": map[string]any{"cidrs": []any{"127.0.0.1/32"}}},
		"metrics": map[string]any{
			"reader":         map[string]any{"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}}},
			"serviceMonitor": map[string]any{"enabled": true},
			"prometheusRule": map[string]any{"enabled": true},
		},
	}
	install := action.NewInstall(cfg)
	install.ReleaseName = name
	install.Namespace = Namespace
	install.Timeout = 2 * time.Minute
	install.Wait = true // the Deployment rolls out: its pods are scheduled and Ready
	rel, err := install.RunWithContext(ctx, chrt, values)
	if err != nil {
		t.Fatalf("helm install: %v", err)
	}
	t.Cleanup(func() {
		// Left behind only when the test failed before uninstalling.
		_, _ = action.NewUninstall(cfg).Run(name)
	})
	if rel.Info.Status != release.StatusDeployed {
		t.Fatalf("release status %s", rel.Info.Status)
	}
	objs, err := decodeAll([]byte(rel.Manifest))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) < 15 {
		t.Fatalf("the release has %d objects: %v", len(objs), objectIDs(objs))
	}
	client := dynamicFor(t, restConfig)
	for _, o := range objs {
		if _, err := client.get(ctx, o); err != nil {
			t.Errorf("%s: %v", id(o), err)
		}
	}
	kube := kubernetes.NewForConfigOrDie(restConfig)
	deployment := func() *appsv1.Deployment {
		d, err := kube.AppsV1().Deployments(Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	want := one[*appsv1.Deployment](t, objs).Spec.Template.Spec.Containers[0].Image
	d := deployment()
	if got := d.Spec.Template.Spec.Containers[0].Image; got != want {
		t.Errorf("stored Deployment runs %q, rendered %q", got, want)
	}
	// KWOK's nodes run no containers but report the pods they are given Ready:
	// the chart's pods were placed (linux nodes of any architecture, spread
	// over nodes, system-cluster-critical) by the cluster's scheduler.
	if d.Status.ReadyReplicas != 2 {
		t.Errorf("Deployment %s: %d ready replicas after helm install --wait, want 2", d.Name, d.Status.ReadyReplicas)
	}
	pods, err := kube.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + name})
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			nodes[p.Spec.NodeName] = true
		}
	}
	if len(nodes) != 2 {
		t.Errorf("the 2 replicas run on %d nodes (%v), want 2: spread over nodes", len(nodes), nodes)
	}

	// Upgrade: the k8s1.35 flavour as the default scheduler.
	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = Namespace
	upgrade.Timeout = 2 * time.Minute
	upgrade.Wait = true
	upgrade.ReuseValues = true
	rel, err = upgrade.RunWithContext(ctx, name, chrt, map[string]any{"mode": "replacement", "image": map[string]any{"flavour": "k8s1.35"}})
	if err != nil {
		t.Fatalf("helm upgrade: %v", err)
	}
	if rel.Version != 2 || rel.Info.Status != release.StatusDeployed {
		t.Fatalf("after the upgrade: revision %d, status %s", rel.Version, rel.Info.Status)
	}
	if got, want := deployment().Spec.Template.Spec.Containers[0].Image, "archfilter/archfilter-scheduler:"+chrt.Metadata.AppVersion+"-k8s1.35"; got != want {
		t.Errorf("after the upgrade the Deployment runs %q, want %q", got, want)
	}
	cm, err := kube.CoreV1().ConfigMaps(Namespace).Get(ctx, name+"-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg := checkSchedulerConfig(t, []byte(cm.Data["config.yaml"])); cfg.Profiles[0].SchedulerName != "default-scheduler" || cfg.LeaderElection.ResourceName != "kube-scheduler" {
		t.Errorf("after the upgrade: schedulerName %q lease %q, want default-scheduler on kube-scheduler", cfg.Profiles[0].SchedulerName, cfg.LeaderElection.ResourceName)
	}
	upgraded, err := decodeAll([]byte(rel.Manifest))
	if err != nil {
		t.Fatal(err)
	}

	// Uninstall: nothing of either revision is left.
	if _, err := action.NewUninstall(cfg).Run(name); err != nil {
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
	list, err := kube.CoreV1().Secrets(Namespace).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("%d Helm release Secrets left", len(list.Items))
	}
}

// installMonitoringCRDs creates testdata/monitoring-crds.yaml and waits until
// the API server serves them.
func installMonitoringCRDs(ctx context.Context, t *testing.T, restConfig *rest.Config) {
	t.Helper()
	client := apiextensionsclient.NewForConfigOrDie(restConfig)
	docs, err := objects.Documents(readFile(t, "charts/archfilter/test/testdata/monitoring-crds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(doc, &crd); err != nil {
			t.Fatal(err)
		}
		_, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, &crd, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("CRD %s not established: %v", crd.Name, err)
		}
	}
}

// dynamicClient reads any object the release created.
type dynamicClient struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

func dynamicFor(t *testing.T, restConfig *rest.Config) *dynamicClient {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(restConfig)
	groups, err := restmapper.GetAPIGroupResources(kube.Discovery())
	if err != nil {
		t.Fatal(err)
	}
	return &dynamicClient{dyn: dynamic.NewForConfigOrDie(restConfig), mapper: restmapper.NewDiscoveryRESTMapper(groups)}
}

func (c *dynamicClient) get(ctx context.Context, o k8sruntime.Object) (any, error) {
	gvk := o.GetObjectKind().GroupVersionKind()
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return nil, err
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.dyn.Resource(mapping.Resource).Namespace(m.GetNamespace()).Get(ctx, m.GetName(), metav1.GetOptions{})
	}
	return c.dyn.Resource(mapping.Resource).Get(ctx, m.GetName(), metav1.GetOptions{})
}
