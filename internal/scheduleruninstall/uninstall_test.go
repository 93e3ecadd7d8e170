package scheduleruninstall

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
)

const (
	ns         = "kube-system"
	deployment = "archfilter-scheduler"
)

var selector = map[string]string{"app.kubernetes.io/name": deployment}

func schedulerDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: deployment, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
		},
	}
}

// schedulerPod is a replica of the scheduler's Deployment.
func schedulerPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: selector}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

// workload is a pod of namespace team that names schedulerName.
func workload(name, schedulerName string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"},
		Spec:       corev1.PodSpec{SchedulerName: schedulerName},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func lease(name, holder string) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), RenewTime: ptr.To(metav1.NewMicroTime(time.Unix(1000, 0)))},
	}
}

// withReplicaSet makes client act as the Deployment's controller: scaled to
// zero, its pods go.
func withReplicaSet(client *fake.Clientset) {
	client.PrependReactor("patch", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		pods, _ := client.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), ns)
		for _, p := range pods.(*corev1.PodList).Items {
			if p.Labels["app.kubernetes.io/name"] == deployment {
				_ = client.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), ns, p.Name)
			}
		}
		return false, nil, nil
	})
}

// renewing makes the Lease name renewed by holder at every read.
func renewing(client *fake.Clientset, name, holder string) {
	var n atomic.Int64
	client.PrependReactor("get", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.GetAction).GetName() != name {
			return false, nil, nil
		}
		l := lease(name, holder)
		l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Unix(1000+n.Add(1), 0)))
		return true, l, nil
	})
}

func TestRun(t *testing.T) {
	const howToForce = "To remove it anyway: helm upgrade ... --set scheduler.uninstall.force=true"
	secondary := Options{
		SchedulerName: "archfilter-scheduler", Namespace: ns, Deployment: deployment,
		LeaseNamespace: ns, LeaseName: "archfilter-scheduler", HowToForce: howToForce,
	}
	replacement := Options{
		SchedulerName: DefaultProfile, Namespace: ns, Deployment: deployment,
		LeaseNamespace: ns, LeaseName: "kube-scheduler", LeaseShared: true, HowToForce: howToForce,
	}
	forced := func(o Options) Options { o.Force = true; return o }
	terminating := workload("leaving", "archfilter-scheduler", corev1.PodRunning)
	terminating.DeletionTimestamp = ptr.To(metav1.Now())
	terminating.Finalizers = []string{"example.com/hold"}
	stillNamed := []runtime.Object{
		workload("web-0", "archfilter-scheduler", corev1.PodRunning),
		workload("web-1", "archfilter-scheduler", corev1.PodRunning),
		workload("job-a", "archfilter-scheduler", corev1.PodPending),
		workload("job-b", "archfilter-scheduler", corev1.PodPending),
		workload("job-c", "archfilter-scheduler", corev1.PodPending),
		workload("job-d", "archfilter-scheduler", ""),
		workload("lost", "archfilter-scheduler", corev1.PodUnknown),
		// Not counted: finished, being deleted, another scheduler's.
		workload("done", "archfilter-scheduler", corev1.PodSucceeded),
		workload("failed", "archfilter-scheduler", corev1.PodFailed),
		terminating,
		workload("other", "default-scheduler", corev1.PodPending),
	}
	for _, tc := range []struct {
		name    string
		opts    Options
		objects []runtime.Object
		// setup adds reactors (the Deployment's controller, a Lease holder).
		setup func(*fake.Clientset)
		// wantErr: substrings of the refusal; none: Run succeeds.
		wantErr []string
		// wantOut: substrings of what Run prints.
		wantOut      []string
		wantReplicas int32
		wantLease    bool
	}{
		{
			name:         "no pod names the scheduler: stopped, Lease deleted",
			opts:         secondary,
			objects:      []runtime.Object{schedulerDeployment(), schedulerPod("archfilter-scheduler-a"), lease("archfilter-scheduler", "archfilter-scheduler-a_1"), workload("other", "default-scheduler", corev1.PodPending)},
			setup:        withReplicaSet,
			wantOut:      []string{"No pod names spec.schedulerName archfilter-scheduler", "scaled to zero (from 2)", "Lease kube-system/archfilter-scheduler deleted"},
			wantReplicas: 0,
		},
		{
			name:    "pods name the scheduler: refused, nothing touched",
			opts:    secondary,
			objects: append([]runtime.Object{schedulerDeployment(), lease("archfilter-scheduler", "x_1")}, stillNamed...),
			wantErr: []string{
				"7 pod(s) still name spec.schedulerName archfilter-scheduler (4 Pending, 2 Running, 1 Unknown): " +
					"team/job-a (Pending), team/job-b (Pending), team/job-c (Pending), team/job-d (Pending), team/lost (Unknown) and 2 more",
				"stay Pending", "kubectl get pods -A --field-selector spec.schedulerName=archfilter-scheduler", ". " + howToForce,
			},
			wantReplicas: 2,
			wantLease:    true,
		},
		{
			name:         "pods name the scheduler, forced: a warning, then stopped and the Lease deleted",
			opts:         forced(secondary),
			objects:      append([]runtime.Object{schedulerDeployment(), lease("archfilter-scheduler", "x_1")}, stillNamed...),
			wantOut:      []string{"Warning: 7 pod(s) still name spec.schedulerName archfilter-scheduler", "(forced: going on)", "Lease kube-system/archfilter-scheduler deleted"},
			wantReplicas: 0,
		},
		{
			name:    "nothing left: no Deployment, no Lease",
			opts:    secondary,
			wantOut: []string{"Deployment kube-system/archfilter-scheduler does not exist", "Lease kube-system/archfilter-scheduler does not exist"},
		},
		{
			name: "default profile: another scheduler takes the Lease over and renews it",
			opts: replacement,
			// Pods that name no scheduler are the cluster's: not counted.
			objects:      append([]runtime.Object{schedulerDeployment(), schedulerPod("archfilter-scheduler-a")}, workload("web", DefaultProfile, corev1.PodPending)),
			setup:        func(c *fake.Clientset) { withReplicaSet(c); renewing(c, "kube-scheduler", "control-plane-1_9f2c") },
			wantOut:      []string{"control-plane-1_9f2c holds the Lease kube-system/kube-scheduler and renews it", "the Lease is kept"},
			wantReplicas: 0,
			wantLease:    true,
		},
		{
			name:    "default profile: still held by a replica of this scheduler: scaled back, refused",
			opts:    replacement,
			objects: []runtime.Object{schedulerDeployment(), schedulerPod("archfilter-scheduler-a"), lease("kube-scheduler", "archfilter-scheduler-a_5e1d")},
			setup:   withReplicaSet,
			wantErr: []string{
				"no other scheduler took the Lease kube-system/kube-scheduler over within 50ms after this one stopped " +
					"(the Lease is still held by archfilter-scheduler-a_5e1d, a pod of this scheduler)",
				"Start the control plane's kube-scheduler again first", "Deployment kube-system/archfilter-scheduler is scaled back to 2 replica(s). " + howToForce,
			},
			wantReplicas: 2,
			wantLease:    true,
		},
		{
			name:         "default profile: a holder that never renews is not a scheduler",
			opts:         replacement,
			objects:      []runtime.Object{schedulerDeployment(), lease("kube-scheduler", "gone-node_77")},
			wantErr:      []string{"(held by gone-node_77, not yet seen renewing it)", "scaled back to 2"},
			wantReplicas: 2,
			wantLease:    true,
		},
		{
			name:         "default profile: nobody takes over, forced: a warning, left stopped",
			opts:         forced(replacement),
			objects:      []runtime.Object{schedulerDeployment(), lease("kube-scheduler", "")},
			wantOut:      []string{"Warning: no other scheduler took the Lease kube-system/kube-scheduler over", "(the Lease is held by none)", "(forced: going on)"},
			wantReplicas: 0,
			wantLease:    true,
		},
		{
			name:      "default profile, Deployment already gone: nothing to scale back",
			opts:      replacement,
			objects:   []runtime.Object{lease("kube-scheduler", "")},
			wantErr:   []string{"(the Lease is held by none)", "Start the control plane's kube-scheduler again first (docs/install.md, \"Uninstall\"). " + howToForce},
			wantOut:   []string{"Deployment kube-system/archfilter-scheduler does not exist"},
			wantLease: true,
		},
		{
			name:    "default profile without a shared Lease: refused before anything stops",
			opts:    Options{SchedulerName: DefaultProfile, Namespace: ns, Deployment: deployment, HowToForce: howToForce},
			objects: []runtime.Object{schedulerDeployment()},
			wantErr: []string{"serves default-scheduler, the profile of every pod that names no scheduler",
				"no telling whether one takes over once it is gone. " + howToForce},
			wantReplicas: 2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			client := fake.NewClientset(tc.objects...)
			if tc.setup != nil {
				tc.setup(client)
			}
			var out strings.Builder
			o := tc.opts
			o.Out, o.PollInterval, o.StopTimeout, o.TakeoverTimeout = &out, 5*time.Millisecond, time.Second, 50*time.Millisecond
			err := Run(ctx, client, o)
			switch {
			case len(tc.wantErr) == 0 && err != nil:
				t.Fatalf("refused: %v\noutput:\n%s", err, out.String())
			case len(tc.wantErr) > 0 && err == nil:
				t.Fatalf("accepted; want an error containing %q\noutput:\n%s", tc.wantErr, out.String())
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			if d, err := client.AppsV1().Deployments(ns).Get(ctx, deployment, metav1.GetOptions{}); err == nil {
				if diff := cmp.Diff(tc.wantReplicas, ptr.Deref(d.Spec.Replicas, 1)); diff != "" {
					t.Errorf("replicas (-want,+got):\n%s", diff)
				}
			}
			_, err = client.CoordinationV1().Leases(o.LeaseNamespace).Get(ctx, o.LeaseName, metav1.GetOptions{})
			if o.LeaseName != "" && tc.wantLease != (err == nil) {
				t.Errorf("Lease there: %v (%v), want %v", err == nil, err, tc.wantLease)
			}
			if err != nil && !apierrors.IsNotFound(err) && o.LeaseName != "" {
				t.Errorf("reading the Lease: %v", err)
			}
		})
	}
}

// The pods' owners' controllers are slow: Run waits for the last pod, and
// says which are left when they do not go.
func TestStopWaitsForThePods(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	client := fake.NewClientset(schedulerDeployment(), schedulerPod("archfilter-scheduler-a"), schedulerPod("archfilter-scheduler-b"))
	var out strings.Builder
	o := Options{SchedulerName: "archfilter-scheduler", Namespace: ns, Deployment: deployment, Out: &out,
		PollInterval: 5 * time.Millisecond, StopTimeout: 50 * time.Millisecond}
	err := Run(ctx, client, o)
	want := fmt.Sprintf("stopping Deployment %s/%s: 2 pod(s) still there after 50ms (archfilter-scheduler-a, archfilter-scheduler-b)", ns, deployment)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want an error containing %q", err, want)
	}
}
