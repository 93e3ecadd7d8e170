package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"sigs.k8s.io/yaml"

	"github.com/archfilter/archfilter/internal/placement/serving"
	"github.com/archfilter/archfilter/test/manifests/objects"
	"github.com/archfilter/archfilter/test/manifests/podsecurity"
)

// ArchFilterRules are the exact rules of the ClusterRole archfilter-scheduler:
// what ArchFilter needs that system:kube-scheduler does not grant.
var ArchFilterRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"secrets", "serviceaccounts"}, Verbs: []string{"list", "watch"}},
	{APIGroups: []string{"archfilter.io"}, Resources: []string{"archfilterpolicies"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"archfilter.io"}, Resources: []string{"archfilterpolicies/status"}, Verbs: []string{"update", "patch"}},
}

// LeaderElectionRules are the exact rules of the Role for lease name.
func LeaderElectionRules(lease string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{lease}, Verbs: []string{"get", "update"}},
	}
}

// ID names an object ("Kind namespace/name").
func ID(o k8sruntime.Object) string { return objects.ID(o) }

// Of returns the objects of type T.
func Of[T k8sruntime.Object](objs []k8sruntime.Object) []T { return objects.Of[T](objs) }

// configMapName is the generated ConfigMap's name, with or without the
// content hash kustomize appends.
var configMapName = regexp.MustCompile(`^` + ConfigMapName + `(-[a-z0-9]{10})?$`)

// Inventory lists the objects' IDs, sorted, with the ConfigMap's hash suffix
// removed.
func Inventory(objs []k8sruntime.Object) []string {
	var ids []string
	for _, o := range objs {
		id := ID(o)
		if cm, ok := o.(*corev1.ConfigMap); ok && configMapName.MatchString(cm.Name) {
			id = "ConfigMap " + cm.Namespace + "/" + ConfigMapName
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// SecondaryInventory is what the base and the secondary overlay produce.
var SecondaryInventory = []string{
	"ClusterRole archfilter-scheduler",
	"ClusterRoleBinding archfilter-scheduler",
	"ClusterRoleBinding archfilter-scheduler:kube-scheduler",
	"ClusterRoleBinding archfilter-scheduler:volume-scheduler",
	"ConfigMap kube-system/archfilter-scheduler-config",
	"CustomResourceDefinition archfilterpolicies.archfilter.io",
	"Deployment kube-system/archfilter-scheduler",
	"Role kube-system/archfilter-scheduler:leader-election",
	"RoleBinding kube-system/archfilter-scheduler:extension-apiserver-authentication-reader",
	"RoleBinding kube-system/archfilter-scheduler:leader-election",
	"Service kube-system/archfilter-scheduler-metrics",
	"ServiceAccount kube-system/archfilter-scheduler",
}

// KubeadmInventory is what the kubeadm-replacement overlay produces.
var KubeadmInventory = []string{
	"ClusterRole archfilter-scheduler",
	"ClusterRoleBinding archfilter-scheduler:kubeadm",
	"CustomResourceDefinition archfilterpolicies.archfilter.io",
}

// problems collects check failures.
type problems []error

func (p *problems) addf(format string, args ...any) { *p = append(*p, fmt.Errorf(format, args...)) }
func (p problems) err() error                       { return errors.Join(p...) }

// CheckSecondary checks the objects of the secondary overlay (or the base):
// exactly the inventory; the ConfigMap holds config (byte for byte), a valid
// configuration for a secondary archfilter-scheduler with its own lease; the
// Deployment, the Service and the RBAC (CheckSecondaryRBAC).
func CheckSecondary(objs []k8sruntime.Object, config []byte) error {
	var p problems
	if got := Inventory(objs); !slices.Equal(got, SecondaryInventory) {
		p.addf("objects:\n  got  %s\n  want %s", strings.Join(got, "\n       "), strings.Join(SecondaryInventory, "\n       "))
	}
	for _, o := range objs {
		m, _ := meta.Accessor(o)
		if namespaced(o) && m.GetNamespace() != Namespace {
			p.addf("%s: namespace %q, want %s", ID(o), m.GetNamespace(), Namespace)
		}
	}
	cms := Of[*corev1.ConfigMap](objs)
	deployments := Of[*appsv1.Deployment](objs)
	if len(cms) != 1 || len(deployments) != 1 {
		p.addf("want one ConfigMap and one Deployment, got %d and %d", len(cms), len(deployments))
		return p.err()
	}
	cm, d := cms[0], deployments[0]
	lease := Name
	if keys := mapsKeys(cm.Data); !slices.Equal(keys, []string{ConfigKey}) || len(cm.BinaryData) > 0 {
		p.addf("ConfigMap %s: keys %v, want [%s]", cm.Name, keys, ConfigKey)
	} else if !bytes.Equal([]byte(cm.Data[ConfigKey]), config) {
		p.addf("ConfigMap %s: %s is not the expected scheduler configuration", cm.Name, ConfigKey)
	} else if cfg, err := LoadSchedulerConfig(config); err != nil {
		p.addf("ConfigMap %s: %v", cm.Name, err)
	} else {
		le := cfg.LeaderElection
		if !le.LeaderElect || le.ResourceNamespace != Namespace || le.ResourceName != Name {
			p.addf("config: leaderElection %v %s/%s, want on with lease %s/%s", le.LeaderElect, le.ResourceNamespace, le.ResourceName, Namespace, Name)
		}
		lease = le.ResourceName
		if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName != Name {
			p.addf("config: want one profile, schedulerName %s", Name)
		} else if !slices.ContainsFunc(cfg.Profiles[0].Plugins.MultiPoint.Enabled, func(pl schedconfig.Plugin) bool { return pl.Name == "ArchFilter" }) {
			p.addf("config: profile %s does not enable ArchFilter", Name)
		}
		if cfg.ClientConnection.Kubeconfig != "" {
			p.addf("config: clientConnection.kubeconfig %q: in a pod the in-cluster config is used", cfg.ClientConnection.Kubeconfig)
		}
	}
	if err := CheckDeployment(d, cm); err != nil {
		p = append(p, err)
	}
	for _, s := range Of[*corev1.Service](objs) {
		if err := CheckService(s, d); err != nil {
			p = append(p, err)
		}
	}
	if err := CheckSecondaryRBAC(objs, lease); err != nil {
		p = append(p, err)
	}
	return p.err()
}

func mapsKeys(m map[string]string) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// CheckDeployment checks the scheduler Deployment: 2 replicas, its
// ServiceAccount, --config from the ConfigMap cm, probes on the secure port,
// resources, a locked-down securityContext, spread over nodes, Linux nodes of
// any architecture, system-cluster-critical.
func CheckDeployment(d *appsv1.Deployment, cm *corev1.ConfigMap) error {
	var p problems
	id := ID(d)
	if d.Namespace != Namespace || d.Name != Name {
		p.addf("%s: want %s/%s", id, Namespace, Name)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		p.addf("%s: replicas %s, want 2", id, ptrString(d.Spec.Replicas))
	}
	tmpl := d.Spec.Template
	if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err != nil || !sel.Matches(labels.Set(tmpl.Labels)) {
		p.addf("%s: selector does not match the pod template's labels", id)
	}
	spec := tmpl.Spec
	if spec.ServiceAccountName != Name {
		p.addf("%s: serviceAccountName %q, want %s", id, spec.ServiceAccountName, Name)
	}
	if spec.AutomountServiceAccountToken != nil && !*spec.AutomountServiceAccountToken {
		p.addf("%s: the in-cluster config needs the ServiceAccount token", id)
	}
	if spec.PriorityClassName != "system-cluster-critical" {
		p.addf("%s: priorityClassName %q, want system-cluster-critical", id, spec.PriorityClassName)
	}
	if !equality.Semantic.DeepEqual(spec.NodeSelector, map[string]string{corev1.LabelOSStable: "linux"}) {
		p.addf("%s: nodeSelector %v, want only %s: linux (the image is multi-arch)", id, spec.NodeSelector, corev1.LabelOSStable)
	}
	if spec.Affinity != nil && spec.Affinity.NodeAffinity != nil {
		if b, _ := yaml.Marshal(spec.Affinity.NodeAffinity); strings.Contains(string(b), corev1.LabelArchStable) {
			p.addf("%s: node affinity on %s: the image is multi-arch", id, corev1.LabelArchStable)
		}
	}
	if !spreadOverNodes(spec, tmpl.Labels) {
		p.addf("%s: replicas are not spread over nodes (topologySpreadConstraints or podAntiAffinity on %s)", id, corev1.LabelHostname)
	}
	if err := podsecurity.CheckPodSpec(id, spec, podsecurity.Exceptions{}); err != nil {
		p = append(p, err)
	}
	if len(spec.Containers) != 1 {
		p.addf("%s: %d containers, want 1", id, len(spec.Containers))
		return p.err()
	}
	c := spec.Containers[0]
	if name, _ := ImageName(c.Image); name != Image {
		p.addf("%s: image %q, want %s:<tag>", id, c.Image, Image)
	}
	if len(c.Command) > 0 && c.Command[0] != Entrypoint {
		p.addf("%s: command %v: leave the image's entrypoint", id, c.Command)
	}
	configPath := ConfigDir + "/" + ConfigKey
	if !slices.Contains(c.Args, "--config="+configPath) {
		p.addf("%s: args %v, want --config=%s", id, c.Args, configPath)
	}
	// The secure port's TLS, as the placement companion's (SECURITY.md, "Hardening").
	for _, want := range []string{"--tls-min-version=VersionTLS12", "--tls-cipher-suites=" + strings.Join(serving.SecureCipherSuites, ",")} {
		if !slices.Contains(c.Args, want) {
			p.addf("%s: args %v, want %s", id, c.Args, want)
		}
	}
	for _, a := range append(slices.Clone(c.Command), c.Args...) {
		for _, ignored := range []string{"--kubeconfig", "--leader-elect", "--master"} {
			if strings.HasPrefix(a, ignored) {
				p.addf("%s: %s is ignored next to --config: set it in the configuration", id, a)
			}
		}
	}
	if err := checkProbes(id, c, ""); err != nil {
		p = append(p, err)
	}
	req, lim := c.Resources.Requests, c.Resources.Limits
	if req.Cpu().IsZero() || req.Memory().IsZero() {
		p.addf("%s: resources.requests %v, want cpu and memory", id, req)
	}
	if lim.Memory().IsZero() || lim.Memory().Cmp(*req.Memory()) < 0 {
		p.addf("%s: resources.limits.memory %v, want one at least the request", id, lim.Memory())
	}
	// The config volume: cm mounted read-only at ConfigDir.
	var mounted bool
	for _, vm := range c.VolumeMounts {
		if vm.MountPath != ConfigDir {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name == vm.Name && v.ConfigMap != nil && v.ConfigMap.Name == cm.Name && vm.ReadOnly {
				mounted = true
			}
		}
	}
	if !mounted {
		p.addf("%s: ConfigMap %s is not mounted read-only at %s", id, cm.Name, ConfigDir)
	}
	return p.err()
}

func spreadOverNodes(spec corev1.PodSpec, podLabels map[string]string) bool {
	for _, c := range spec.TopologySpreadConstraints {
		if c.TopologyKey != corev1.LabelHostname || c.MaxSkew != 1 || c.LabelSelector == nil {
			continue
		}
		if sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector); err == nil && sel.Matches(labels.Set(podLabels)) {
			return true
		}
	}
	if spec.Affinity != nil && spec.Affinity.PodAntiAffinity != nil {
		aa := spec.Affinity.PodAntiAffinity
		terms := slices.Clone(aa.RequiredDuringSchedulingIgnoredDuringExecution)
		for _, w := range aa.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
		for _, t := range terms {
			if t.TopologyKey != corev1.LabelHostname || t.LabelSelector == nil {
				continue
			}
			if sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector); err == nil && sel.Matches(labels.Set(podLabels)) {
				return true
			}
		}
	}
	return false
}

// kubeadmExceptions are what kubeadm's kube-scheduler static pod needs: root
// (scheduler.conf is root's, mode 0600), the host's network (it serves on
// 127.0.0.1) and its files, read-only.
func kubeadmExceptions(spec corev1.PodSpec) podsecurity.Exceptions {
	ex := podsecurity.Exceptions{Root: true, HostNetwork: true}
	for _, v := range spec.Volumes {
		if v.HostPath != nil && strings.HasPrefix(v.HostPath.Path, "/etc/kubernetes/") {
			ex.HostPaths = append(ex.HostPaths, v.HostPath.Path)
		}
	}
	return ex
}

// checkProbes: liveness and startup on /livez, readiness on /readyz, HTTPS on
// the secure port (host, when given, e.g. 127.0.0.1 with hostNetwork).
func checkProbes(id string, c corev1.Container, host string) error {
	var p problems
	for _, pr := range []struct {
		kind, path string
		probe      *corev1.Probe
		required   bool
	}{
		{"livenessProbe", "/livez", c.LivenessProbe, true},
		{"readinessProbe", "/readyz", c.ReadinessProbe, true},
		{"startupProbe", "/livez", c.StartupProbe, false},
	} {
		if pr.probe == nil {
			if pr.required {
				p.addf("%s: no %s", id, pr.kind)
			}
			continue
		}
		g := pr.probe.HTTPGet
		if g == nil {
			p.addf("%s: %s is not an HTTP GET", id, pr.kind)
			continue
		}
		if g.Path != pr.path || g.Scheme != corev1.URISchemeHTTPS || g.Host != host || ContainerPort(c, g.Port) != SecurePort {
			p.addf("%s: %s %s %s://%s:%s, want %s on https port %d", id, pr.kind, g.Path, g.Scheme, g.Host, g.Port.String(), pr.path, SecurePort)
		}
	}
	return p.err()
}

// ContainerPort resolves a (named) port of c; 0 when there is none.
func ContainerPort(c corev1.Container, port intstr.IntOrString) int32 {
	if port.Type == intstr.Int {
		return port.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == port.StrVal {
			return cp.ContainerPort
		}
	}
	return 0
}

// CheckService checks the metrics Service: port 10259 to the Deployment's
// secure port, selecting its pods.
func CheckService(s *corev1.Service, d *appsv1.Deployment) error {
	var p problems
	id := ID(s)
	if s.Name != MetricsService || s.Namespace != Namespace {
		p.addf("%s: want %s/%s", id, Namespace, MetricsService)
	}
	if len(s.Spec.Selector) == 0 || !metav1SelectorMatches(s.Spec.Selector, d.Spec.Template.Labels) {
		p.addf("%s: selector %v does not select the scheduler's pods", id, s.Spec.Selector)
	}
	if len(s.Spec.Ports) != 1 || len(d.Spec.Template.Spec.Containers) != 1 {
		p.addf("%s: want one port", id)
		return p.err()
	}
	sp := s.Spec.Ports[0]
	if sp.Port != SecurePort || ContainerPort(d.Spec.Template.Spec.Containers[0], sp.TargetPort) != SecurePort {
		p.addf("%s: port %d → %s, want %d → the container's %d", id, sp.Port, sp.TargetPort.String(), SecurePort, SecurePort)
	}
	if sp.Name != "https" {
		p.addf("%s: port name %q, want https", id, sp.Name)
	}
	return p.err()
}

func metav1SelectorMatches(selector, podLabels map[string]string) bool {
	for k, v := range selector {
		if podLabels[k] != v {
			return false
		}
	}
	return true
}

// CheckKubeadmNode checks the files of the kubeadm-replacement overlay's
// node/ directory: config is the default-scheduler configuration plus
// clientConnection.kubeconfig /etc/kubernetes/scheduler.conf; pod is kubeadm's
// kube-scheduler static pod running image with --config, mounting both files.
func CheckKubeadmNode(pod *corev1.Pod, config, defaultConfig []byte, image string) error {
	var p problems
	const kubeconfig = "/etc/kubernetes/scheduler.conf"
	const configPath = "/etc/kubernetes/archfilter/config.yaml"
	var got, want map[string]any
	if err := yaml.Unmarshal(config, &got); err != nil {
		return err
	}
	if err := yaml.Unmarshal(defaultConfig, &want); err != nil {
		return err
	}
	if cc := got["clientConnection"]; !equality.Semantic.DeepEqual(cc, map[string]any{"kubeconfig": kubeconfig}) {
		p.addf("kubeadm config: clientConnection %v, want {kubeconfig: %s}", cc, kubeconfig)
	}
	delete(got, "clientConnection")
	if !equality.Semantic.DeepEqual(got, want) {
		gb, _ := yaml.Marshal(got)
		wb, _ := yaml.Marshal(want)
		p.addf("kubeadm config without clientConnection differs from default-scheduler.yaml:\n%s\nwant:\n%s", gb, wb)
	}
	cfg, err := LoadSchedulerConfig(config)
	if err != nil {
		p.addf("kubeadm config: %v", err)
	} else if le := cfg.LeaderElection; !le.LeaderElect || le.ResourceNamespace != Namespace || le.ResourceName != "kube-scheduler" {
		p.addf("kubeadm config: leaderElection %v %s/%s, want kube-scheduler's lease", le.LeaderElect, le.ResourceNamespace, le.ResourceName)
	}

	id := ID(pod)
	if pod.Namespace != Namespace || pod.Name != "kube-scheduler" || pod.Labels["component"] != "kube-scheduler" || pod.Labels["tier"] != "control-plane" {
		p.addf("%s: want kubeadm's kube-system/kube-scheduler with labels component=kube-scheduler, tier=control-plane", id)
	}
	spec := pod.Spec
	if !spec.HostNetwork || spec.PriorityClassName != "system-node-critical" {
		p.addf("%s: want hostNetwork and priorityClassName system-node-critical, like kubeadm's", id)
	}
	if err := podsecurity.CheckPodSpec(id, spec, kubeadmExceptions(spec)); err != nil {
		p = append(p, err)
	}
	if len(spec.Containers) != 1 {
		p.addf("%s: %d containers, want 1", id, len(spec.Containers))
		return p.err()
	}
	c := spec.Containers[0]
	if c.Name != "kube-scheduler" {
		p.addf("%s: container %q, want kube-scheduler (kubeadm patches and tools look for it)", id, c.Name)
	}
	if c.Image != image {
		p.addf("%s: image %q, want the Deployment's %q", id, c.Image, image)
	}
	args := append(slices.Clone(c.Command), c.Args...)
	if len(args) == 0 || args[0] != Entrypoint {
		p.addf("%s: command %v, want %s first", id, c.Command, Entrypoint)
	}
	for _, want := range []string{"--config=" + configPath, "--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig, "--bind-address=127.0.0.1"} {
		if !slices.Contains(args, want) {
			p.addf("%s: command %v lacks %s", id, args, want)
		}
	}
	for _, a := range args {
		for _, ignored := range []string{"--kubeconfig", "--leader-elect", "--master"} {
			if strings.HasPrefix(a, ignored) {
				p.addf("%s: %s is ignored next to --config: set it in the configuration", id, a)
			}
		}
	}
	if err := checkProbes(id, c, "127.0.0.1"); err != nil {
		p = append(p, err)
	}
	if c.Resources.Requests.Cpu().IsZero() {
		p.addf("%s: no cpu request", id)
	}
	// Both files come from the host, read-only, at the same paths.
	for _, file := range []struct{ path, hostPath string }{{configPath, "/etc/kubernetes/archfilter"}, {kubeconfig, kubeconfig}} {
		var ok bool
		for _, vm := range c.VolumeMounts {
			if !vm.ReadOnly || !(vm.MountPath == file.path || strings.HasPrefix(file.path, strings.TrimSuffix(vm.MountPath, "/")+"/")) {
				continue
			}
			for _, v := range spec.Volumes {
				if v.Name == vm.Name && v.HostPath != nil && v.HostPath.Path == file.hostPath && vm.MountPath == file.hostPath {
					ok = true
				}
			}
		}
		if !ok {
			p.addf("%s: %s is not mounted read-only from the host's %s", id, file.path, file.hostPath)
		}
	}
	return p.err()
}

// podSpecs returns the pod specs of o (Deployment, Pod), to edit in place.
func podSpecs(o k8sruntime.Object) []*corev1.PodSpec {
	switch o := o.(type) {
	case *appsv1.Deployment:
		return []*corev1.PodSpec{&o.Spec.Template.Spec}
	case *corev1.Pod:
		return []*corev1.PodSpec{&o.Spec}
	}
	return nil
}

func ptrString[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}
