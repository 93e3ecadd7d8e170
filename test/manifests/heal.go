package manifests

import (
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/archfilter/archfilter/internal/placement/serving"
	"github.com/archfilter/archfilter/test/manifests/podsecurity"
)

// The heal overlay: the scheduler of the base and the placement companion's
// image in --mode=heal (the misplaced-pod watch alone).
const (
	HealOverlay = "manifests/overlays/heal"
	// HealName names the companion's ServiceAccount, RBAC, Deployment,
	// Service and Lease.
	HealName = "archfilter-heal"
	// PlacementImage is the companion's image, which the heal mode runs too.
	PlacementImage = "archfilter/archfilter-placement"
	// HealMetricsPort is its metrics listener (HTTPS, /healthz anonymous).
	HealMetricsPort = 8080
)

// HealInventory is what the heal overlay adds to SecondaryInventory.
var HealInventory = []string{
	"ClusterRole " + HealName,
	"ClusterRoleBinding " + HealName,
	"Deployment kube-system/" + HealName,
	"Role kube-system/" + HealName,
	"RoleBinding kube-system/" + HealName,
	"Service kube-system/" + HealName,
	"ServiceAccount kube-system/" + HealName,
}

// HealUser is the user the heal companion's pods authenticate as.
func HealUser() user.Info {
	return &user.DefaultInfo{
		Name:   serviceaccount.MakeUsername(Namespace, HealName),
		Groups: append(serviceaccount.MakeGroupNames(Namespace), user.AllAuthenticated),
	}
}

// HealEviction is the request --misplaced=evict adds.
var HealEviction = Request{Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: "default", Name: "app"}

// HealRequests are the requests the heal companion makes with its Lease
// lease: informers on pods and nodes (the watch), the credential store's and
// the namespace selector's, events on pods, leader election, and its metrics
// listener's delegated authorization.
func HealRequests(lease string) []Request {
	return []Request{
		{Verb: "list", Resource: "pods"}, {Verb: "watch", Resource: "pods"},
		{Verb: "list", Resource: "nodes"}, {Verb: "watch", Resource: "nodes"},
		{Verb: "create", Resource: "events", Namespace: "default"},
		{Verb: "patch", Resource: "events", Namespace: "default"},
		{Verb: "list", Resource: "secrets"}, {Verb: "watch", Resource: "secrets"}, {Verb: "get", Resource: "secrets", Namespace: "default", Name: "registry"},
		{Verb: "list", Resource: "serviceaccounts"}, {Verb: "watch", Resource: "serviceaccounts"},
		{Verb: "get", Resource: "namespaces", Name: "default"}, {Verb: "list", Resource: "namespaces"}, {Verb: "watch", Resource: "namespaces"},
		{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: Namespace},
		{Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Namespace: Namespace, Name: lease},
		{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: Namespace, Name: lease},
		{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"},
		{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
	}
}

// HealForbidden must be denied to the heal companion: nothing of the
// placement mode (pods updated, a webhook configuration, a Secret of its
// own, the placement companion's Lease), no pod created or deleted but
// through an eviction.
func HealForbidden() []Request {
	return []Request{
		{Verb: "update", Resource: "pods", Namespace: "default", Name: "app"},
		{Verb: "patch", Resource: "pods", Namespace: "default", Name: "app"},
		{Verb: "create", Resource: "pods", Namespace: "default"},
		{Verb: "delete", Resource: "pods", Namespace: "default", Name: "app"},
		{Verb: "create", Resource: "pods", Subresource: "binding", Namespace: "default"},
		{Verb: "create", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"},
		{Verb: "create", Resource: "secrets", Namespace: Namespace},
		{Verb: "update", Resource: "secrets", Namespace: Namespace, Name: "archfilter-placement-tls"},
		{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: Namespace, Name: "archfilter-placement"},
		{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: Namespace, Name: Name},
		{Verb: "patch", Resource: "nodes", Name: "node-1"},
		{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
	}
}

// IsHeal reports whether o is one of the heal companion's objects (its
// app.kubernetes.io/name label).
func IsHeal(o k8sruntime.Object) bool {
	m, err := meta.Accessor(o)
	return err == nil && m.GetLabels()["app.kubernetes.io/name"] == HealName
}

// CheckHealOverlay checks the heal overlay: the scheduler's objects are the
// secondary overlay's (CheckSecondary with config), the others the heal
// companion in report mode (CheckHeal).
func CheckHealOverlay(objs []k8sruntime.Object, config []byte) error {
	var sched, heal []k8sruntime.Object
	for _, o := range objs {
		if IsHeal(o) {
			heal = append(heal, o)
		} else {
			sched = append(sched, o)
		}
	}
	var p problems
	if err := CheckSecondary(sched, config); err != nil {
		p = append(p, err)
	}
	if err := CheckHeal(heal, false); err != nil {
		p = append(p, err)
	}
	return p.err()
}

// LastFlag is the value of the last --name=value among args ("" and false
// when absent): the companion's flag parsing keeps the last one given.
func LastFlag(args []string, name string) (string, bool) {
	value, found := "", false
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			value, found = v, true
		} else if a == name {
			value, found = "", true
		}
	}
	return value, found
}

// CheckHeal checks the heal companion's objects: exactly HealInventory, in
// kube-system; one hardened replica of the companion's image in --mode=heal
// with --misplaced=report (evict: evict), leader election on its own Lease,
// probes and a metrics Service on its HTTPS metrics port; and RBAC that
// allows HealRequests (and HealEviction with evict), none of
// HealForbidden, no wildcard and no rule it does not need.
func CheckHeal(objs []k8sruntime.Object, evict bool) error {
	var p problems
	if got := Inventory(objs); !slices.Equal(got, HealInventory) {
		p.addf("heal objects:\n  got  %s\n  want %s", strings.Join(got, "\n       "), strings.Join(HealInventory, "\n       "))
	}
	for _, o := range objs {
		m, _ := meta.Accessor(o)
		if namespaced(o) && m.GetNamespace() != Namespace {
			p.addf("%s: namespace %q, want %s", ID(o), m.GetNamespace(), Namespace)
		}
	}
	deployments := Of[*appsv1.Deployment](objs)
	if len(deployments) != 1 {
		p.addf("want one heal Deployment, got %d", len(deployments))
		return p.err()
	}
	d := deployments[0]
	id := ID(d)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		p.addf("%s: replicas %s, want 1", id, ptrString(d.Spec.Replicas))
	}
	tmpl := d.Spec.Template
	if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err != nil || !sel.Matches(labels.Set(tmpl.Labels)) {
		p.addf("%s: selector does not match the pod template's labels", id)
	}
	spec := tmpl.Spec
	if spec.ServiceAccountName != HealName {
		p.addf("%s: serviceAccountName %q, want %s", id, spec.ServiceAccountName, HealName)
	}
	if !slices.Equal(mapsKeys(spec.NodeSelector), []string{corev1.LabelOSStable}) {
		p.addf("%s: nodeSelector %v, want only %s (the image is multi-arch)", id, spec.NodeSelector, corev1.LabelOSStable)
	}
	if err := podsecurity.CheckPodSpec(id, spec, podsecurity.Exceptions{}); err != nil {
		p = append(p, err)
	}
	if len(spec.Containers) != 1 {
		p.addf("%s: %d containers, want 1", id, len(spec.Containers))
		return p.err()
	}
	c := spec.Containers[0]
	if name, _ := ImageName(c.Image); name != PlacementImage {
		p.addf("%s: image %q, want %s:<tag>", id, c.Image, PlacementImage)
	}
	mode := "report"
	if evict {
		mode = "evict"
	}
	for flag, want := range map[string]string{
		"--mode": "heal", "--misplaced": mode, "--namespace": Namespace, "--leader-elect": "",
		"--metrics-addr": ":8080", "--service-name": HealName,
		"--tls-min-version": "VersionTLS12", "--tls-cipher-suites": strings.Join(serving.SecureCipherSuites, ","),
	} {
		if got, ok := LastFlag(c.Args, flag); !ok || got != want {
			p.addf("%s: %s=%q (given: %v), want %q", id, flag, got, ok, want)
		}
	}
	for _, flag := range []string{"--webhook-url", "--remove-gates", "--lease-name", "--metrics-auth"} {
		if _, ok := LastFlag(c.Args, flag); ok {
			p.addf("%s: %s: leave it to the heal mode's default", id, flag)
		}
	}
	for _, pr := range []struct {
		kind  string
		probe *corev1.Probe
	}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}} {
		if pr.probe == nil || pr.probe.HTTPGet == nil {
			p.addf("%s: no HTTP %s", id, pr.kind)
			continue
		}
		g := pr.probe.HTTPGet
		if g.Path != "/healthz" || g.Scheme != corev1.URISchemeHTTPS || ContainerPort(c, g.Port) != HealMetricsPort {
			p.addf("%s: %s %s %s:%s, want /healthz on https port %d", id, pr.kind, g.Path, g.Scheme, g.Port.String(), HealMetricsPort)
		}
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		p.addf("%s: resources.requests %v, want cpu and memory", id, c.Resources.Requests)
	}
	for _, s := range Of[*corev1.Service](objs) {
		if !metav1SelectorMatches(s.Spec.Selector, tmpl.Labels) || len(s.Spec.Selector) == 0 {
			p.addf("%s: selector %v does not select the companion's pods", ID(s), s.Spec.Selector)
		}
		if len(s.Spec.Ports) != 1 || ContainerPort(c, s.Spec.Ports[0].TargetPort) != HealMetricsPort || s.Spec.Ports[0].Name != "metrics" {
			p.addf("%s: ports %v, want one named metrics to the container's %d", ID(s), s.Spec.Ports, HealMetricsPort)
		}
	}
	if err := CheckNoWildcards(objs); err != nil {
		p = append(p, err)
	}
	need, forbidden := HealRequests(HealName), HealForbidden()
	if evict {
		need = append(need, HealEviction)
	} else {
		forbidden = append(forbidden, HealEviction)
	}
	if err := checkAccess(objs, HealUser(), need, forbidden); err != nil {
		p = append(p, err)
	}
	return p.err()
}
