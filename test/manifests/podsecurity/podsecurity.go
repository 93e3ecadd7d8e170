// Package podsecurity checks that every workload archfilter ships (the
// kustomize overlays, the Helm chart) runs hardened: every container and init
// container non-root with a non-zero user, a read-only root filesystem, no
// privilege escalation, seccomp RuntimeDefault, every capability dropped and
// none added, nothing privileged; no host network, PID, IPC, ports or paths.
// That is Pod Security Admission's restricted level and a little more
// (read-only root filesystem, no capability kept back). It needs only
// client-go's types, so the chart's tests (a module of their own) use it too.
package podsecurity

import (
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/archfilter/archfilter/test/manifests/objects"
)

// Workload is one object's pod template.
type Workload struct {
	ID   string // "Kind namespace/name"
	Spec *corev1.PodSpec
}

// Workloads returns the pod specs of objs' Deployments, StatefulSets,
// DaemonSets, ReplicaSets, Jobs, CronJobs and Pods, to check or (in tests of
// the check) to edit in place.
func Workloads(objs []k8sruntime.Object) []Workload {
	var out []Workload
	for _, o := range objs {
		var spec *corev1.PodSpec
		switch o := o.(type) {
		case *appsv1.Deployment:
			spec = &o.Spec.Template.Spec
		case *appsv1.StatefulSet:
			spec = &o.Spec.Template.Spec
		case *appsv1.DaemonSet:
			spec = &o.Spec.Template.Spec
		case *appsv1.ReplicaSet:
			spec = &o.Spec.Template.Spec
		case *batchv1.Job:
			spec = &o.Spec.Template.Spec
		case *batchv1.CronJob:
			spec = &o.Spec.JobTemplate.Spec.Template.Spec
		case *corev1.Pod:
			spec = &o.Spec
		default:
			continue
		}
		out = append(out, Workload{ID: objects.ID(o), Spec: spec})
	}
	return out
}

// Exceptions are what a caller knowingly allows.
type Exceptions struct {
	// HostPaths are host directories a workload may mount read-only (the
	// chart's credentialProviders.hostPath: kubelet's provider binaries).
	HostPaths []string
	// Root and HostNetwork are for kubeadm's control-plane static pod only
	// (it reads the root-owned /etc/kubernetes/scheduler.conf and serves on
	// the host's loopback).
	Root, HostNetwork bool
}

// Check checks every workload of objs; the error names each workload,
// container and field that falls short. Objects of other kinds are ignored:
// callers assert which workloads they expect.
func Check(objs []k8sruntime.Object, ex Exceptions) error {
	var errs []error
	for _, w := range Workloads(objs) {
		errs = append(errs, CheckPodSpec(w.ID, *w.Spec, ex))
	}
	return errors.Join(errs...)
}

// CheckPodSpec checks one pod spec; id names it in the errors.
func CheckPodSpec(id string, spec corev1.PodSpec, ex Exceptions) error {
	var errs []error
	addf := func(format string, args ...any) { errs = append(errs, fmt.Errorf(id+": "+format, args...)) }
	psc := spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	if (spec.HostNetwork && !ex.HostNetwork) || spec.HostPID || spec.HostIPC {
		addf("hostNetwork %v, hostPID %v, hostIPC %v: want none", spec.HostNetwork, spec.HostPID, spec.HostIPC)
	}
	if psc.SeccompProfile != nil && psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		addf("pod seccompProfile %s, want RuntimeDefault", psc.SeccompProfile.Type)
	}
	for _, v := range spec.Volumes {
		if hp := v.HostPath; hp != nil && !slices.Contains(ex.HostPaths, hp.Path) {
			addf("volume %s is the host's %s: want no hostPath", v.Name, hp.Path)
		} else if hp != nil && !mountedReadOnly(spec, v.Name) {
			addf("volume %s (the host's %s) is mounted writable", v.Name, hp.Path)
		}
	}
	for _, c := range containers(spec) {
		cid := c.kind + " " + c.Name
		sc := c.SecurityContext
		if sc == nil {
			sc = &corev1.SecurityContext{}
		}
		nonRoot := psc.RunAsNonRoot
		if sc.RunAsNonRoot != nil {
			nonRoot = sc.RunAsNonRoot
		}
		uid := psc.RunAsUser
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		if !ex.Root && (nonRoot == nil || !*nonRoot) {
			addf("%s: want runAsNonRoot: true", cid)
		}
		if !ex.Root && (uid == nil || *uid == 0) {
			addf("%s: runAsUser %s, want a non-zero user", cid, ptrString(uid))
		}
		if sc.Privileged != nil && *sc.Privileged {
			addf("%s: privileged", cid)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			addf("%s: allowPrivilegeEscalation %s, want false", cid, ptrString(sc.AllowPrivilegeEscalation))
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			addf("%s: readOnlyRootFilesystem %s, want true", cid, ptrString(sc.ReadOnlyRootFilesystem))
		}
		seccomp := psc.SeccompProfile
		if sc.SeccompProfile != nil {
			seccomp = sc.SeccompProfile
		}
		if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			addf("%s: want seccompProfile RuntimeDefault (pod or container)", cid)
		}
		if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
			addf("%s: capabilities %+v, want drop [ALL] and add none", cid, sc.Capabilities)
		}
		if sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
			addf("%s: procMount %s", cid, *sc.ProcMount)
		}
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				addf("%s: hostPort %d", cid, p.HostPort)
			}
		}
	}
	return errors.Join(errs...)
}

type container struct {
	kind string
	corev1.Container
}

// containers are spec's containers, init containers and ephemeral containers.
func containers(spec corev1.PodSpec) []container {
	var out []container
	for _, c := range spec.InitContainers {
		out = append(out, container{"initContainer", c})
	}
	for _, c := range spec.Containers {
		out = append(out, container{"container", c})
	}
	for _, c := range spec.EphemeralContainers {
		out = append(out, container{"ephemeralContainer", corev1.Container(c.EphemeralContainerCommon)})
	}
	return out
}

// mountedReadOnly: every mount of volume name is read-only.
func mountedReadOnly(spec corev1.PodSpec, name string) bool {
	for _, c := range containers(spec) {
		for _, m := range c.VolumeMounts {
			if m.Name == name && !m.ReadOnly {
				return false
			}
		}
	}
	return true
}

func ptrString[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// Mutation weakens a pod spec in one way Check must catch.
type Mutation struct {
	Name  string
	Apply func(*corev1.PodSpec)
}

// Mutations are, for each container and init container of spec, every field
// Check requires taken away (at both the pod's and the container's level where
// either counts), and the host namespaces and a host path added. A test of a
// rendered workload runs Check on each mutated copy: every one must fail, so
// the check is known to look at every container of what is shipped.
func Mutations(spec corev1.PodSpec) []Mutation {
	var out []Mutation
	forEach := func(name string, f func(*corev1.PodSpec, *corev1.SecurityContext)) {
		for i, c := range containers(spec) {
			out = append(out, Mutation{Name: c.kind + " " + c.Name + ": " + name, Apply: func(s *corev1.PodSpec) {
				var sc **corev1.SecurityContext
				if n := len(s.InitContainers); i < n {
					sc = &s.InitContainers[i].SecurityContext
				} else if i < n+len(s.Containers) {
					sc = &s.Containers[i-n].SecurityContext
				} else {
					sc = &s.EphemeralContainers[i-n-len(s.Containers)].SecurityContext
				}
				if *sc == nil {
					*sc = &corev1.SecurityContext{}
				}
				if s.SecurityContext == nil {
					s.SecurityContext = &corev1.PodSecurityContext{}
				}
				f(s, *sc)
			}})
		}
	}
	forEach("runAsNonRoot removed", func(s *corev1.PodSpec, sc *corev1.SecurityContext) {
		s.SecurityContext.RunAsNonRoot, sc.RunAsNonRoot = nil, nil
	})
	forEach("runAsUser removed", func(s *corev1.PodSpec, sc *corev1.SecurityContext) {
		s.SecurityContext.RunAsUser, sc.RunAsUser = nil, nil
	})
	forEach("runAsUser 0", func(_ *corev1.PodSpec, sc *corev1.SecurityContext) { sc.RunAsUser = new(int64) })
	forEach("readOnlyRootFilesystem removed", func(_ *corev1.PodSpec, sc *corev1.SecurityContext) { sc.ReadOnlyRootFilesystem = nil })
	forEach("allowPrivilegeEscalation removed", func(_ *corev1.PodSpec, sc *corev1.SecurityContext) { sc.AllowPrivilegeEscalation = nil })
	forEach("seccompProfile removed", func(s *corev1.PodSpec, sc *corev1.SecurityContext) {
		s.SecurityContext.SeccompProfile, sc.SeccompProfile = nil, nil
	})
	forEach("capabilities removed", func(_ *corev1.PodSpec, sc *corev1.SecurityContext) { sc.Capabilities = nil })
	forEach("a capability added", func(_ *corev1.PodSpec, sc *corev1.SecurityContext) {
		caps := corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}}
		sc.Capabilities = &caps
	})
	forEach("privileged", func(_ *corev1.PodSpec, sc *corev1.SecurityContext) { t := true; sc.Privileged = &t })
	out = append(out,
		Mutation{Name: "hostNetwork", Apply: func(s *corev1.PodSpec) { s.HostNetwork = true }},
		Mutation{Name: "hostPID", Apply: func(s *corev1.PodSpec) { s.HostPID = true }},
		Mutation{Name: "hostPath volume", Apply: func(s *corev1.PodSpec) {
			s.Volumes = append(s.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}},
	)
	return out
}

// CheckMutations runs Check on every Mutation of every workload of objs and
// returns an error naming each mutation Check let through, or that objs
// holds no workload.
func CheckMutations(objs []k8sruntime.Object, ex Exceptions) error {
	ws := Workloads(objs)
	if len(ws) == 0 {
		return errors.New("no workload to mutate")
	}
	var errs []error
	for _, w := range ws {
		for _, m := range Mutations(*w.Spec) {
			spec := w.Spec.DeepCopy()
			m.Apply(spec)
			if CheckPodSpec(w.ID, *spec, ex) == nil {
				errs = append(errs, fmt.Errorf("%s: %s passes the check", w.ID, m.Name))
			}
		}
	}
	return errors.Join(errs...)
}
