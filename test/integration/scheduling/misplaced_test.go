package scheduling

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// billing is the namespace of pods placed before archfilter was installed.
const billing = "billing"

// startErrorMessage is what containerd and runc report for a binary of another
// architecture.
const startErrorMessage = `failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "/proxy": exec format error: unknown`

// createMisplaced creates, in the billing namespace, what the default scheduler left
// before archfilter was installed (the controllers, which do not run here, are played
// by hand): the invoices Deployment's pod, its ReplicaSet's, bound to arm-1 with the
// amd64-only proxy image and crash-looping with the runtime's exec format error; and
// the reindex Job's pod, bound to arm-2, whose multi-platform web image holds, on its
// arm64 side, a binary of another architecture (the kubelet's event says so).
func createMisplaced(t *testing.T, ctx context.Context, cs clientset.Interface, img shopImages) {
	t.Helper()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("creating %s: %v", what, err)
		}
	}
	_, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: billing}}, metav1.CreateOptions{})
	must("namespace "+billing, err)
	labels := map[string]string{"app": "invoices"}
	template := v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "proxy", Image: img.proxy}}}}
	dep, err := cs.AppsV1().Deployments(billing).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "invoices"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}, metav1.CreateOptions{})
	must("deployment invoices", err)
	owner := func(kind string, obj metav1.Object) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: obj.GetName(), UID: obj.GetUID(), Controller: ptr.To(true)}}
	}
	rs, err := cs.AppsV1().ReplicaSets(billing).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "invoices-6b7c9", OwnerReferences: owner("Deployment", dep)},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}, metav1.CreateOptions{})
	must("replicaset", err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "invoices-6b7c9-k2x4q", Labels: labels, OwnerReferences: owner("ReplicaSet", rs)}, Spec: template.Spec}
	pod.Spec.NodeName = "arm-1"
	pod, err = cs.CoreV1().Pods(billing).Create(ctx, pod, metav1.CreateOptions{})
	must("pod "+pod.Name, err)
	pod.Status = v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{
		Name: "proxy", Image: img.proxy, RestartCount: 4,
		State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 1m20s restarting failed container=proxy pod=" + pod.Name}},
		LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "StartError", ExitCode: 128, Message: startErrorMessage}},
	}}}
	_, err = cs.CoreV1().Pods(billing).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	must("status of "+pod.Name, err)

	job, err := cs.BatchV1().Jobs(billing).Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "reindex"},
		Spec: batchv1.JobSpec{Template: v1.PodTemplateSpec{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{Name: "reindex", Image: img.web}}}}}}, metav1.CreateOptions{})
	must("job reindex", err)
	jobPod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "reindex-8fz2m",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true)}}},
		Spec: *job.Spec.Template.Spec.DeepCopy()}
	jobPod.Spec.NodeName = "arm-2"
	jobPod, err = cs.CoreV1().Pods(billing).Create(ctx, jobPod, metav1.CreateOptions{})
	must("pod "+jobPod.Name, err)
	now := metav1.NewTime(time.Now())
	_, err = cs.CoreV1().Events(billing).Create(ctx, &v1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: jobPod.Name + ".failed"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: billing, Name: jobPod.Name, UID: jobPod.UID, APIVersion: "v1",
			FieldPath: "spec.containers{reindex}"},
		Reason: "Failed", Type: v1.EventTypeWarning, Count: 1, FirstTimestamp: now, LastTimestamp: now,
		Message: `Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "/reindex": exec format error: unknown`,
		Source:  v1.EventSource{Component: "kubelet", Host: "arm-2"},
	}, metav1.CreateOptions{})
	must("event", err)
}
