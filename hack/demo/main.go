// Command archfilter-demo drives `make demo` and the cluster scripts of
// hack/cluster: it creates the fake nodes, seeds the local registries, runs
// archfilter-scheduler beside or instead of the default scheduler, applies the
// sample workload and prints where every pod landed.
//
//	archfilter-demo ping   --kubeconfig K            exit 0 when the API server answers
//	archfilter-demo nodes  --kubeconfig K            create the fake nodes, wait until schedulable
//	archfilter-demo seed   --registry H --private-registry H --user U --password P
//	archfilter-demo config --template F --out F [--insecure-registry H]...
//	archfilter-demo run    --kubeconfig K --mode secondary|replacement [...]
//	archfilter-demo unschedulable --kubeconfig K     the demo's unschedulable pods, one a line
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/archfilter/archfilter/test/e2e/framework"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "ping":
		err = ping(ctx, args)
	case "nodes":
		err = nodes(ctx, args)
	case "seed":
		err = seed(ctx, args)
	case "config":
		err = config(args)
	case "run":
		err = runDemo(ctx, args)
	case "unschedulable":
		err = unschedulable(ctx, args)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: archfilter-demo ping|nodes|seed|config|run|unschedulable [flags] (see hack/demo/main.go)")
	os.Exit(2)
}

func client(kubeconfig string) (kubernetes.Interface, error) {
	if kubeconfig == "" {
		return nil, fmt.Errorf("--kubeconfig is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 100, 200
	cfg.Timeout = 10 * time.Second
	return kubernetes.NewForConfig(cfg)
}

func ping(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("ping", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster")
	_ = fs.Parse(args)
	cs, err := client(*kubeconfig)
	if err != nil {
		return err
	}
	_, err = cs.Discovery().ServerVersion()
	return err
}

func nodes(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("nodes", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster")
	_ = fs.Parse(args)
	cs, err := client(*kubeconfig)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := framework.EnsureNodes(ctx, cs, framework.DefaultNodes); err != nil {
		return err
	}
	if err := framework.WaitNodesSchedulable(ctx, cs, framework.NodeNames(framework.DefaultNodes), 2*time.Minute); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stderr, 0, 0, 2, ' ', 0)
	for _, spec := range framework.DefaultNodes {
		n, err := cs.CoreV1().Nodes().Get(ctx, spec.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "    %s\t%s\tReady\n", n.Name, framework.NodePlatform(n))
	}
	tw.Flush()
	fmt.Fprintf(os.Stderr, "    %d nodes schedulable in %s\n", len(framework.DefaultNodes), time.Since(start).Round(100*time.Millisecond))
	return nil
}

type registryFlags struct {
	public, private, user, password string
}

func (r *registryFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.public, "registry", "127.0.0.1:5001", "anonymous registry host:port")
	fs.StringVar(&r.private, "private-registry", "127.0.0.1:5002", "registry host:port that needs credentials")
	fs.StringVar(&r.user, "user", "demo", "private registry user")
	fs.StringVar(&r.password, "password", "archfilter-demo", "private registry password")
}

func (r *registryFlags) registries() (public, private framework.Registry) {
	return framework.Registry{PushHost: r.public},
		framework.Registry{PushHost: r.private, Username: r.user, Password: r.password}
}

func seed(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("seed", flag.ExitOnError)
	var rf registryFlags
	rf.register(fs)
	_ = fs.Parse(args)
	public, private := rf.registries()
	start := time.Now()
	tw := tabwriter.NewWriter(os.Stderr, 0, 0, 2, ' ', 0)
	for _, im := range framework.AllImages {
		r := public
		if im.Private {
			r = private
		}
		digest, err := framework.Push(ctx, r, im)
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "    %s\t%s\t%s\n", im.Ref(public, private), digest[:19], im.About)
	}
	tw.Flush()
	fmt.Fprintf(os.Stderr, "    %d images pushed in %s\n", len(framework.AllImages), time.Since(start).Round(100*time.Millisecond))
	return nil
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func config(args []string) error {
	fs := flag.NewFlagSet("config", flag.ExitOnError)
	template := fs.String("template", "", "KubeSchedulerConfiguration to copy")
	out := fs.String("out", "", "where to write the copy")
	kubeconfig := fs.String("kubeconfig", "", "set clientConnection.kubeconfig")
	var insecure stringList
	fs.Var(&insecure, "insecure-registry", "plain-HTTP registry host to add to the ArchFilter args (repeatable)")
	_ = fs.Parse(args)
	cfg, err := framework.LoadSchedulerConfig(*template)
	if err != nil {
		return err
	}
	if *kubeconfig != "" {
		cfg.SetKubeconfig(*kubeconfig)
	}
	return cfg.AddInsecureRegistries(insecure...).Write(*out)
}

// The sample workload: a Deployment per fixture image.
func workloads() []framework.Workload {
	return []framework.Workload{
		{Name: "multiarch", Image: framework.ImageMultiArch, Replicas: 5},
		{Name: "amd64-only", Image: framework.ImageAMD64Only, Replicas: 3},
		{Name: "arm64-only", Image: framework.ImageARM64Only, Replicas: 2},
		{Name: "s390x-only", Image: framework.ImageS390XOnly, Replicas: 2},
		{Name: "windows-only", Image: framework.ImageWindows, Replicas: 1},
		{Name: "private", Image: framework.ImagePrivate, Replicas: 2, PullSecret: pullSecret},
		{Name: "riscv64-only", Image: framework.ImageRISCV64Only, Replicas: 1},
	}
}

const (
	namespace  = "archfilter-demo"
	pullSecret = "demo-registry"
)

func runDemo(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster")
	mode := fs.String("mode", "secondary", "secondary: run archfilter-scheduler beside the cluster's scheduler; replacement: the cluster's default scheduler is archfilter")
	binary := fs.String("scheduler-binary", "bin/archfilter-scheduler", "archfilter-scheduler binary (secondary mode)")
	template := fs.String("config", "manifests/scheduler-config/secondary-scheduler.yaml", "secondary mode: the scheduler config to copy; replacement mode: the config the cluster's scheduler runs with (published for kubectl archfilter, as the chart does)")
	stateDir := fs.String("state-dir", ".cache/demo", "scheduler config copies and logs")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long to wait for the pods to settle")
	var rf registryFlags
	rf.register(fs)
	_ = fs.Parse(args)
	cs, err := client(*kubeconfig)
	if err != nil {
		return err
	}
	public, private := rf.registries()
	start := time.Now()

	step("resetting namespace %s", namespace)
	if err := framework.ResetNamespace(ctx, cs, namespace); err != nil {
		return err
	}
	if err := framework.ApplyPullSecret(ctx, cs, namespace, pullSecret, private); err != nil {
		return err
	}

	var wls []framework.Workload
	// archfilterScheduler names the pods archfilter places: the demo fails if
	// one of them is on a node that cannot run its images.
	var archfilterScheduler string
	// running is the config archfilter's scheduler runs with.
	var running string
	switch *mode {
	case "secondary":
		dir, _ := filepath.Abs(filepath.Join(*stateDir, "secondary"))
		launcher := &framework.ProcessLauncher{
			Binary: *binary, Kubeconfig: *kubeconfig, Template: *template,
			Registries: []string{public.PushHost, private.PushHost},
		}
		step("starting archfilter-scheduler as a secondary scheduler (%s; log %s)", *template, dir)
		g, err := launcher.Launch(ctx, framework.LaunchOptions{LogDir: dir})
		if err != nil {
			return err
		}
		defer g.Stop(context.Background())
		if _, err := g.Leader(ctx, time.Minute); err != nil {
			return fmt.Errorf("%w\n%s", err, g.Logs())
		}
		info("leader of lease kube-system/%s after %s", g.SchedulerName(), time.Since(start).Round(100*time.Millisecond))
		archfilterScheduler = g.SchedulerName()
		running = filepath.Join(dir, g.SchedulerName()+".yaml") // where Launch wrote its copy
		for _, w := range workloads() {
			w.SchedulerName = g.SchedulerName()
			wls = append(wls, w)
		}
		// The same amd64-only image left to the cluster's plain kube-scheduler,
		// to show what happens without archfilter.
		wls = append(wls, framework.Workload{Name: "amd64-only-upstream", Image: framework.ImageAMD64Only, Replicas: 4})
	case "replacement":
		step("the cluster's default-scheduler is archfilter-scheduler (manifests/scheduler-config/default-scheduler.yaml)")
		wls = workloads()
		archfilterScheduler = "default-scheduler"
		running = *template
	default:
		return fmt.Errorf("--mode %q: want secondary or replacement", *mode)
	}

	if err := publishConfig(ctx, cs, running); err != nil {
		return err
	}
	info("its configuration is in ConfigMap %s/%s (label %s=%s), where kubectl archfilter finds it", configNamespace, configName, configLabel, configLabelScheduler)

	// One team policy (docs/team-by-team.md), applied once a scheduler runs.
	if err := applyPolicy(ctx, *kubeconfig); err != nil {
		return err
	}

	want := 0
	images := map[string]framework.Image{}
	for _, w := range wls {
		want += int(w.Replicas)
		images[w.Name] = w.Image
		if err := framework.ApplyDeployment(ctx, cs, w.Deployment(namespace, public, private)); err != nil {
			return err
		}
	}
	step("applied %d Deployments (%d pods); waiting for every pod to be scheduled or found unschedulable", len(wls), want)
	applied := time.Now()
	_, waitErr := framework.WaitSettled(ctx, cs, namespace, "", want, *timeout, func(c framework.Counts) {
		info("[%5.1fs] %s", time.Since(applied).Seconds(), c)
	})
	rows, err := recordedRows(ctx, cs, images, framework.Deciders{Schedulers: []string{archfilterScheduler}})
	if err != nil {
		return err
	}
	fmt.Println()
	framework.PrintTable(os.Stdout, rows)
	fmt.Println()
	sum, wrongBy := framework.Summary(rows)
	fmt.Printf("%s mode: %d pods: %d on a node that runs their images, %d on a node that cannot (WRONG), %d unschedulable, %d pending; %s\n",
		*mode, len(rows), sum["ok"], sum["WRONG"], sum["unschedulable"], sum["pending"], time.Since(start).Round(100*time.Millisecond))
	for by, n := range wrongBy {
		fmt.Printf("  WRONG placed by %s: %d\n", by, n)
	}
	if n := wrongBy[archfilterScheduler]; n > 0 {
		return fmt.Errorf("%s mode: archfilter (%s) placed %d pods on nodes that cannot run their images", *mode, archfilterScheduler, n)
	}
	if err := checkPolicy(rows); err != nil {
		return err
	}
	if err := checkRecorded(rows); err != nil {
		return err
	}
	return waitErr
}

// recordedRows builds the table once every pod's ARCHFILTER cell has what the
// cluster records about it: the scheduler sends its events a moment after it
// binds a pod or marks it unschedulable, which WaitSettled watches for.
func recordedRows(ctx context.Context, cs kubernetes.Interface, images map[string]framework.Image, d framework.Deciders) ([]framework.Row, error) {
	var rows []framework.Row
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		if rows, err = framework.PlacementWith(ctx, cs, namespace, images, d); err != nil {
			return false, nil // transient API errors: keep polling
		}
		return unrecorded(rows) == nil, nil
	})
	if rows == nil {
		return nil, err
	}
	return rows, nil // the table then shows what is missing, and checkRecorded fails
}

// unrecorded returns the rows whose pod has nothing recorded about it yet.
func unrecorded(rows []framework.Row) []framework.Row {
	var out []framework.Row
	for _, r := range rows {
		if r.ArchFilter == "" || strings.Contains(r.ArchFilter, "nothing recorded") {
			out = append(out, r)
		}
	}
	return out
}

// checkRecorded fails unless the ARCHFILTER column is filled for every pod.
func checkRecorded(rows []framework.Row) error {
	if missing := unrecorded(rows); len(missing) > 0 {
		return fmt.Errorf("%d pods have nothing recorded about them (no decision record, no scheduler event), e.g. %s", len(missing), missing[0].Pod)
	}
	return nil
}

// unschedulable prints the names of the demo's pods that no node fits.
func unschedulable(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("unschedulable", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster")
	_ = fs.Parse(args)
	cs, err := client(*kubeconfig)
	if err != nil {
		return err
	}
	_, pods, err := framework.Count(ctx, cs, namespace, "")
	if err != nil {
		return err
	}
	var names []string
	for i := range pods {
		if pods[i].DeletionTimestamp == nil && framework.StateOf(&pods[i]) == framework.PodUnschedulable {
			names = append(names, pods[i].Name)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("no pod of %s is unschedulable", namespace)
	}
	sort.Strings(names)
	fmt.Println(strings.Join(names, "\n"))
	return nil
}

func step(format string, a ...any) { fmt.Fprintf(os.Stderr, "\033[1;34m==>\033[0m "+format+"\n", a...) }
func info(format string, a ...any) { fmt.Fprintf(os.Stderr, "    "+format+"\n", a...) }
