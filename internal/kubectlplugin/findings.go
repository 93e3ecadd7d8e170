package kubectlplugin

import (
	"context"
	"fmt"
	"io"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/archfilter/archfilter/pkg/podplatform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// findings are what check adds to its workloads: configs that contradict their index,
// binaries that contradict their manifest (--deep) and digests that narrow an image to
// one platform. Each list is a top-level key of -o json and yaml, beside "workloads".
type findings struct {
	Configs   []configCheck   `json:"configs,omitempty"`
	Binaries  []binaryCheck   `json:"binaries,omitempty"`
	Narrowing []narrowingView `json:"narrowing,omitempty"`
}

// checkFindings looks for what check reports beside its workloads: narrowing digests
// always, configs unless --check-config=false, binaries with --deep.
func checkFindings(ctx context.Context, s *session, workloads []workload, views []workloadView, configs configFlags, deep deepFlags) findings {
	f := findings{Narrowing: narrowingOf(ctx, s, workloads, views)}
	if configs.enabled {
		f.Configs = configCheckWorkloads(ctx, s, workloads, views)
	}
	if deep.enabled {
		f.Binaries = deepCheckWorkloads(ctx, s, workloads, views, deep.limit)
	}
	return f
}

// checkFailedMessage is check's last line when it fails: the workloads that cannot
// run, the configs that contradict their index and the binary checks that failed.
func checkFailedMessage(workloads, of, configs, binaries int) string {
	var parts []string
	if workloads > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d workloads failed the check", workloads, of))
	}
	if configs > 0 {
		parts = append(parts, fmt.Sprintf("%d platform configs contradict their index", configs))
	}
	if binaries > 0 {
		parts = append(parts, fmt.Sprintf("%d binary checks failed", binaries))
	}
	return strings.Join(parts, "; ")
}

// addTo puts the findings in a structured document.
func (f findings) addTo(doc map[string]any) {
	if f.Configs != nil {
		doc["configs"] = f.Configs
	}
	if f.Binaries != nil {
		doc["binaries"] = f.Binaries
	}
	if f.Narrowing != nil {
		doc["narrowing"] = f.Narrowing
	}
}

// printTables prints the findings after check's table.
func (f findings) printTables(w io.Writer) error {
	if err := printConfigs(w, f.Configs, true); err != nil {
		return err
	}
	if len(f.Binaries) > 0 {
		writeLine(w, "")
		if err := printBinaries(w, f.Binaries, true); err != nil {
			return err
		}
	}
	if len(f.Narrowing) > 0 {
		writeLine(w, "")
		printNarrowing(w, f.Narrowing)
	}
	return nil
}

// status counts the binary checks that fail the check (exit status 1) and those that
// leave it unanswered (2); configStatus counts the config checks. Narrowing is a
// warning and counts for neither.
func (f findings) status() (failed, unanswered int) {
	for _, b := range f.Binaries {
		switch {
		case b.failed():
			failed++
		case b.Result == binaryNotChecked:
			unanswered++
		}
	}
	return failed, unanswered
}

// printBinaries prints --deep's checks, one line per platform (and container).
func printBinaries(w io.Writer, checks []binaryCheck, withWorkload bool) error {
	tw := newTable(w)
	if withWorkload {
		fmt.Fprintln(tw, "WORKLOAD\tCONTAINER\tIMAGE\tBINARY CHECK\tFINDING")
	} else {
		fmt.Fprintln(tw, "IMAGE\tBINARY CHECK\tFINDING")
	}
	for _, b := range checks {
		if withWorkload {
			fmt.Fprintf(tw, "%s\t%s\t", b.Workload, b.Container)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", b.Image, b.Result, b.Message)
	}
	return tw.Flush()
}

// deepCheckWorkloads checks the binaries of every container of workloads whose image
// resolved, once per image and command.
func deepCheckWorkloads(ctx context.Context, s *session, workloads []workload, views []workloadView, limit int64) []binaryCheck {
	type job struct {
		image string
		cc    containerCommand
	}
	type use struct {
		workload, container string
		key                 int
	}
	var (
		jobs []job
		uses []use
	)
	index := map[string]int{}
	for i, w := range workloads {
		failedImages := map[string]bool{}
		for _, img := range views[i].Images {
			if img.Error != "" {
				failedImages[img.Image] = true
			}
		}
		podplatform.ForEachImage(w.Pod, func(img podplatform.Image) bool {
			if img.Kind == podplatform.KindImageVolume || failedImages[img.Reference] {
				return true
			}
			cc := commandOf(w.Pod, img.Name)
			key := img.Reference + "\x00" + strings.Join(cc.Command, "\x00") + "\x01" + strings.Join(cc.Args, "\x00")
			k, ok := index[key]
			if !ok {
				k = len(jobs)
				index[key] = k
				jobs = append(jobs, job{image: img.Reference, cc: cc})
			}
			uses = append(uses, use{workload: workloadName(views[i]), container: img.Name, key: k})
			return true
		})
	}
	results := concurrently(jobs, func(j job) []binaryCheck {
		return checkBinaries(ctx, s, resolver.Request{Image: j.image, Credentials: s.credentials}, j.cc, limit)
	})
	out := []binaryCheck{}
	for _, u := range uses {
		for _, b := range results[u.key] {
			b.Workload, b.Container = u.workload, u.container
			out = append(out, b)
		}
	}
	return out
}

// commandOf is the command and args of the pod's container name.
func commandOf(pod *v1.Pod, name string) containerCommand {
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			if c.Name == name {
				return containerCommand{Command: c.Command, Args: c.Args}
			}
		}
	}
	return containerCommand{}
}

// printImageBinaries prints inspect --deep's checks after its table.
func printImageBinaries(w io.Writer, views []imageView) error {
	var all []binaryCheck
	for _, v := range views {
		all = append(all, v.Binaries...)
	}
	if len(all) == 0 {
		return nil
	}
	writeLine(w, "")
	return printBinaries(w, all, false)
}

// imageFindingsStatus is inspect's exit status, from its config checks and --deep's
// binary checks, once every image resolved.
func imageFindingsStatus(views []imageView) error {
	var all findings
	for _, v := range views {
		all.Configs = append(all.Configs, v.Configs...)
		all.Binaries = append(all.Binaries, v.Binaries...)
	}
	cfgFailed, cfgUnanswered := configStatus(all.Configs)
	binFailed, binUnanswered := all.status()
	var unanswered, failed []string
	if cfgUnanswered > 0 {
		unanswered = append(unanswered, fmt.Sprintf("%d config checks could not be answered", cfgUnanswered))
	}
	if binUnanswered > 0 {
		unanswered = append(unanswered, fmt.Sprintf("%d binary checks could not be answered", binUnanswered))
	}
	if cfgFailed > 0 {
		failed = append(failed, fmt.Sprintf("%d platform configs contradict their index", cfgFailed))
	}
	if binFailed > 0 {
		failed = append(failed, fmt.Sprintf("%d binary checks failed", binFailed))
	}
	switch {
	case len(unanswered) > 0:
		return &ExitError{Code: ExitInputError, Msg: strings.Join(unanswered, "; ")}
	case len(failed) > 0:
		return &ExitError{Code: ExitFailed, Msg: strings.Join(failed, "; ")}
	}
	return nil
}
