package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/profile"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"sigs.k8s.io/scheduler-plugins/pkg/noderesources"

	"github.com/archfilter/archfilter/apis/annotations"
	_ "github.com/archfilter/archfilter/apis/config/scheme" // ArchFilterArgs
	"github.com/archfilter/archfilter/internal/schedulercmd"
	"github.com/archfilter/archfilter/pkg/plugins/archfilter"
)

// TestRegistersEverySchedulerPluginsPlugin pins what this flavour registers to
// the list the main line uses to name this flavour, so the two cannot drift.
func TestRegistersEverySchedulerPluginsPlugin(t *testing.T) {
	registry := frameworkruntime.Registry{}
	for _, opt := range Options() {
		if err := opt(registry); err != nil {
			t.Fatal(err)
		}
	}
	got := make([]string, 0, len(registry))
	for name := range registry {
		got = append(got, name)
	}
	want := append([]string{archfilter.Name, archfilter.TaintTolerationName}, schedulercmd.SchedulerPlugins.Names...)
	want = append(want, schedulercmd.InTreeSince136.Names...)
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("registered plugins (-want,+got):\n%s", diff)
	}
}

// TestSchedulerPluginsVersionIsTheModuleGraphs: the version the "use the
// k8s1.35 flavour" error names is the one this binary is built with.
func TestSchedulerPluginsVersionIsTheModuleGraphs(t *testing.T) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("no build information in the test binary")
	}
	for _, dep := range info.Deps {
		if dep.Path == "sigs.k8s.io/scheduler-plugins" {
			if dep.Version != schedulercmd.SchedulerPluginsVersion {
				t.Errorf("built with sigs.k8s.io/scheduler-plugins %s, schedulercmd.SchedulerPluginsVersion says %s", dep.Version, schedulercmd.SchedulerPluginsVersion)
			}
			return
		}
	}
	t.Error("sigs.k8s.io/scheduler-plugins is not in the test binary's build information")
}

// TestNewerInTreePluginsAreNotInTree checks that the names this flavour sends
// to the main line really are missing from its own kube-scheduler (the main
// line's test checks that they are in its own).
func TestNewerInTreePluginsAreNotInTree(t *testing.T) {
	inTree := plugins.NewInTreeRegistry()
	for _, name := range schedulercmd.InTreeSince136.Names {
		if _, ok := inTree[name]; ok {
			t.Errorf("%s is in this kube-scheduler's in-tree registry: drop it from InTreeSince136", name)
		}
	}
}

// TestSchedulerPluginsBesideArchFilter enables a scheduler-plugins plugin in a
// profile beside ArchFilter, configured with its own args (decoded through the
// scheme this binary registers), and schedules pods with the real framework:
// ArchFilter keeps the pod on its declared platform, and among those nodes the
// scheduler-plugins plugin's mode decides.
func TestSchedulerPluginsBesideArchFilter(t *testing.T) {
	registry := frameworkruntime.Registry{}
	for _, opt := range Options() {
		if err := opt(registry); err != nil {
			t.Fatal(err)
		}
	}
	node := func(name, arch, cpu string) *v1.Node {
		n := st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{v1.ResourcePods: "32", v1.ResourceCPU: cpu, v1.ResourceMemory: "8Gi"}).Obj()
		n.Labels = map[string]string{v1.LabelOSStable: "linux", v1.LabelArchStable: arch, v1.LabelHostname: name}
		return n
	}
	nodes := []runtime.Object{node("arm64-small", "arm64", "4"), node("arm64-large", "arm64", "64"), node("amd64-medium", "amd64", "16")}
	for _, tc := range []struct{ mode, want string }{
		// Least prefers the node with the least allocatable, Most the most; the amd64 node,
		// between them, is never a candidate: the pod declares linux/arm64.
		{"Least", "arm64-small"},
		{"Most", "arm64-large"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			path := filepath.Join(t.TempDir(), "config.yaml")
			config := `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: archfilter-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: ArchFilter
      - name: ` + noderesources.AllocatableName + `
        weight: 100
  pluginConfig:
  - name: ` + noderesources.AllocatableName + `
    args:
      mode: ` + tc.mode + `
      resources:
      - name: cpu
        weight: 1
`
			if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
				t.Fatal(err)
			}
			logger, _ := ktesting.NewTestContext(t)
			cfg, err := options.LoadConfigFromFile(logger, path)
			if err != nil {
				t.Fatal(err)
			}
			cs := fake.NewClientset(nodes...)
			factory := informers.NewSharedInformerFactory(cs, 0)
			broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
			defer broadcaster.Shutdown()
			sched, err := scheduler.New(ctx, cs, factory, nil, profile.NewRecorderFactory(broadcaster),
				scheduler.WithProfiles(cfg.Profiles...), scheduler.WithFrameworkOutOfTreeRegistry(registry))
			if err != nil {
				t.Fatalf("scheduler.New: %v", err)
			}
			factory.Start(ctx.Done())
			factory.WaitForCacheSync(ctx.Done())
			if err := sched.WaitForHandlersSync(ctx); err != nil {
				t.Fatal(err)
			}
			pod := st.MakePod().Namespace("default").Name("p").UID("p").SchedulerName("archfilter-scheduler").
				Container("registry.example/app:v1").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
			pod.Annotations = map[string]string{annotations.Platforms: "linux/arm64"}
			fwk := sched.Profiles["archfilter-scheduler"]
			var result scheduler.ScheduleResult
			err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
				// Until the scheduler's cache holds the nodes.
				result, err = sched.SchedulePod(ctx, fwk, framework.NewCycleState(), pod)
				return err == nil, nil
			})
			if err != nil {
				t.Fatalf("SchedulePod: %v", err)
			}
			if result.SuggestedHost != tc.want {
				t.Errorf("mode %s: scheduled on %s, want %s", tc.mode, result.SuggestedHost, tc.want)
			}
		})
	}
}
