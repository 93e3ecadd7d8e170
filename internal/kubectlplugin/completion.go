package kubectlplugin

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
)

// completionTimeout bounds the cluster reads one completion makes: a shell waits for them.
const completionTimeout = 5 * time.Second

// addCompletions completes, from the cluster of the kubeconfig flags, pod names for why's
// argument and --for-pod, namespaces for -n and contexts for --context. kubectl (1.26+)
// asks for them through kubectl_complete-archfilter, which runs cobra's __complete.
func addCompletions(root *cobra.Command, kube *genericclioptions.ConfigFlags) {
	_ = root.RegisterFlagCompletionFunc("namespace", completeNamespaces(kube))
	_ = root.RegisterFlagCompletionFunc("context", completeContexts(kube))
	for _, sub := range root.Commands() {
		if sub.Flags().Lookup("for-pod") != nil {
			_ = sub.RegisterFlagCompletionFunc("for-pod", completePods(kube))
		}
		if sub.Name() == "why" {
			pods := completePods(kube)
			sub.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
				if len(args) > 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp // why takes one pod
				}
				return pods(cmd, args, toComplete)
			}
		}
	}
}

// completePods lists the pods of -n (or the context's namespace) whose names start with
// what was typed.
func completePods(kube *genericclioptions.ConfigFlags) cobra.CompletionFunc {
	return completeFromCluster(kube, func(ctx context.Context, client kubernetes.Interface, ns string) ([]string, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		names := make([]string, 0, len(pods.Items))
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		return names, nil
	})
}

// completeNamespaces lists the cluster's namespaces whose names start with what was typed.
func completeNamespaces(kube *genericclioptions.ConfigFlags) cobra.CompletionFunc {
	return completeFromCluster(kube, func(ctx context.Context, client kubernetes.Interface, _ string) ([]string, error) {
		nss, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		names := make([]string, 0, len(nss.Items))
		for _, ns := range nss.Items {
			names = append(names, ns.Name)
		}
		return names, nil
	})
}

// completeFromCluster completes with the names list reads from the cluster of the
// kubeconfig flags (ns is -n or the context's namespace), within completionTimeout;
// nothing when the cluster cannot be read.
func completeFromCluster(kube *genericclioptions.ConfigFlags, list func(ctx context.Context, client kubernetes.Interface, ns string) ([]string, error)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		client, ns, err := clusterClient(kube)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(completionContext(cmd), completionTimeout)
		defer cancel()
		names, err := list(ctx, client, ns)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeContexts lists the kubeconfig's contexts; no cluster is contacted.
func completeContexts(kube *genericclioptions.ConfigFlags) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		cfg, err := kube.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := make([]string, 0, len(cfg.Contexts))
		for name := range cfg.Contexts {
			names = append(names, name)
		}
		return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

func completionContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// withPrefix returns the names that start with prefix, sorted.
func withPrefix(names []string, prefix string) []string {
	out := []string{}
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
