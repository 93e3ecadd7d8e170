package karpenter

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/archfilter/archfilter/test/e2e/framework"
	"github.com/archfilter/archfilter/test/manifests/objects"
)

// The kinds this test creates, by kind: Karpenter's CRDs and objects are not
// in client-go, and a fixed table needs no discovery.
var resources = map[string]schema.GroupVersionResource{
	"CustomResourceDefinition": {Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
	"NodePool":                 {Group: "karpenter.sh", Version: "v1", Resource: "nodepools"},
	"KWOKNodeClass":            {Group: "karpenter.kwok.sh", Version: "v1alpha1", Resource: "kwoknodeclasses"},
}

var nodeClaims = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}

// cluster is the local control plane (hack/karpenter/e2e.sh brought it up,
// with no nodes) and what the test runs against it.
type cluster struct {
	kubeconfig string
	cs         kubernetes.Interface
	dyn        dynamic.Interface
	registry   framework.Registry
	logDir     string
}

// env reads a variable hack/karpenter/e2e.sh sets.
func env(t *testing.T, key string) string {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		t.Fatalf("%s is not set: run `make e2e-karpenter` (hack/karpenter/e2e.sh)", key)
	}
	return v
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	kubeconfig := env(t, "E2E_KUBECONFIG")
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cache := os.Getenv("ARCHFILTER_CACHE") // hack/cluster/lib.sh's
	if cache == "" {
		cache = filepath.Join(framework.RepoRoot(), ".cache")
	}
	logDir := filepath.Join(cache, "karpenter-e2e")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &cluster{
		kubeconfig: kubeconfig,
		cs:         kubernetes.NewForConfigOrDie(cfg),
		dyn:        dynamic.NewForConfigOrDie(cfg),
		registry:   framework.Registry{PushHost: env(t, "REGISTRY")},
		logDir:     logDir,
	}
}

// applyFile server-side applies every document of a YAML file and returns
// the objects' names.
func (c *cluster) applyFile(ctx context.Context, path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	docs, err := objects.Documents(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var names []string
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		gvr, ok := resources[u.GetKind()]
		if !ok {
			return nil, fmt.Errorf("%s: kind %s is not one this test applies", path, u.GetKind())
		}
		body, err := json.Marshal(u.Object)
		if err != nil {
			return nil, err
		}
		_, err = c.dyn.Resource(gvr).Patch(ctx, u.GetName(), types.ApplyPatchType, body,
			metav1.PatchOptions{FieldManager: "archfilter-e2e-karpenter", Force: ptr.To(true)})
		if err != nil {
			return nil, fmt.Errorf("%s: applying %s %s: %w", path, u.GetKind(), u.GetName(), err)
		}
		names = append(names, u.GetName())
	}
	return names, nil
}

// waitEstablished waits until the API server serves every CRD named.
func (c *cluster) waitEstablished(ctx context.Context, names []string) error {
	crds := c.dyn.Resource(resources["CustomResourceDefinition"])
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			u, err := crds.Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			established := false
			for _, cond := range conds {
				m, _ := cond.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					established = true
				}
			}
			if !established {
				return false, nil
			}
		}
		return true, nil
	})
}

// installKarpenter applies Karpenter's CRDs (KARPENTER_CRDS, from the module
// cache) and the NodePool, and starts Karpenter's KWOK provider as a process.
func (c *cluster) installKarpenter(ctx context.Context, t *testing.T) *framework.Process {
	t.Helper()
	var names []string
	for _, f := range strings.Split(env(t, "KARPENTER_CRDS"), ",") {
		applied, err := c.applyFile(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, applied...)
	}
	if err := c.waitEstablished(ctx, names); err != nil {
		t.Fatalf("Karpenter's CRDs %v not established: %v", names, err)
	}
	if _, err := c.applyFile(ctx, "testdata/nodepool.yaml"); err != nil {
		t.Fatal(err)
	}
	instanceTypes, err := filepath.Abs("testdata/instance-types.json")
	if err != nil {
		t.Fatal(err)
	}
	// Lives until the test's cleanup, not until the caller's context ends.
	p, err := framework.StartProcess(context.WithoutCancel(ctx), env(t, "KARPENTER_BIN"), filepath.Join(c.logDir, "karpenter.log"), nil, []string{
		"KUBECONFIG=" + c.kubeconfig,
		// One replica: no lease to wait for.
		"DISABLE_LEADER_ELECTION=true",
		// Karpenter binds its metrics and health endpoints on every
		// interface and has no address flag; port 0 picks free ones so
		// runs beside other clusters do not collide. Nothing dials out:
		// its only client is the kubeconfig's loopback API server.
		"METRICS_PORT=0", "HEALTH_PROBE_PORT=0",
		"INSTANCE_TYPES_FILE_PATH=" + instanceTypes,
		// Launch soon after pods turn up (defaults: 1s idle, 10s max).
		"BATCH_IDLE_DURATION=1s", "BATCH_MAX_DURATION=3s",
		"LOG_LEVEL=debug",
	})
	if err != nil {
		t.Fatalf("starting Karpenter: %v", err)
	}
	c.track(t, p, "karpenter")
	return p
}

// nodeClaims lists Karpenter's NodeClaims.
func (c *cluster) nodeClaims(ctx context.Context) ([]unstructured.Unstructured, error) {
	l, err := c.dyn.Resource(nodeClaims).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// removeCapacity deletes every NodeClaim (Karpenter drains and deletes their
// nodes), any that turns up meanwhile too, until no NodeClaim and no node is
// left.
func (c *cluster) removeCapacity(ctx context.Context) error {
	var claims []unstructured.Unstructured
	var nodes *v1.NodeList
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		if claims, err = c.nodeClaims(ctx); err != nil {
			return false, nil
		}
		for _, cl := range claims {
			if cl.GetDeletionTimestamp() != nil {
				continue
			}
			err := c.dyn.Resource(nodeClaims).Delete(ctx, cl.GetName(), metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("deleting NodeClaim %s: %w", cl.GetName(), err)
			}
		}
		if nodes, err = c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
			return false, nil
		}
		return len(claims) == 0 && len(nodes.Items) == 0, nil
	})
	if err != nil {
		left := 0
		if nodes != nil {
			left = len(nodes.Items)
		}
		return fmt.Errorf("%d NodeClaims and %d nodes left: %w", len(claims), left, err)
	}
	return nil
}

// track stops p when the test ends and, for the case the test binary dies
// first (a timeout), leaves its pid in the log directory, where
// hack/karpenter/e2e.sh ends it.
func (c *cluster) track(t *testing.T, p *framework.Process, name string) {
	t.Helper()
	pidFile := filepath.Join(c.logDir, name+".pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(p.PID())), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		_ = os.Remove(pidFile)
	})
}
