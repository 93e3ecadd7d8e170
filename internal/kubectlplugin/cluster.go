package kubectlplugin

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The CLI's client-side rate limit. client-go's defaults (5 per second, bursts of 10)
// are for controllers that run for ever; a command lists a few kinds, then reads a
// ReplicaSet or a Job per pod (report --running), and with the defaults it waits and
// client-go logs "Waited for … due to client-side throttling". These are the values
// kubectl gives its discovery client; the API server's priority and fairness still
// bounds what a user may ask.
const (
	clientQPS   = 50
	clientBurst = 300
)

// clusterCheckTimeout bounds the first request to a cluster (GET /version), which tells
// a cluster that does not answer from one that does before a command reads anything.
// It is long enough for an exec credential plugin (aws, gcloud) to mint a token.
const clusterCheckTimeout = 10 * time.Second

// configureClients sets how every client the commands build from kube talks to the
// cluster. NewCommand calls it once.
func configureClients(kube *genericclioptions.ConfigFlags) {
	kube.WrapConfigFn = func(c *rest.Config) *rest.Config {
		c.QPS, c.Burst = clientQPS, clientBurst
		return c
	}
}

// connector connects to the cluster of the kubeconfig flags when called.
func connector(kube *genericclioptions.ConfigFlags) connectFunc {
	return func() (kubernetes.Interface, string, error) { return clusterClient(kube) }
}

// clusterClient returns a clientset and the namespace of -n or the kubeconfig context,
// once the cluster has answered. Every command reaches the cluster through it, so a
// missing kubeconfig, an unknown context or a cluster that does not answer gives one
// error that says what to do (a *clusterError), before any command-specific request.
func clusterClient(kube *genericclioptions.ConfigFlags) (kubernetes.Interface, string, error) {
	where, err := locateKubeconfig(kube)
	if err != nil {
		return nil, "", err
	}
	cfg, err := kube.ToRESTConfig()
	if err != nil {
		return nil, "", &clusterError{msg: fmt.Sprintf("kubeconfig %s: %v", where.files, err), err: err}
	}
	ns, _, err := kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", &clusterError{msg: fmt.Sprintf("kubeconfig %s: namespace: %v", where.files, err), err: err}
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", &clusterError{msg: fmt.Sprintf("kubeconfig %s: %v", where.files, err), err: err}
	}
	if err := checkCluster(kube, where, cfg, client); err != nil {
		return nil, "", err
	}
	return client, ns, nil
}

// clusterError is a cluster the commands cannot use: no kubeconfig, an unknown context,
// a server that does not answer or refuses the credentials. Its message says which
// and what to do.
type clusterError struct {
	msg string
	err error
}

func (e *clusterError) Error() string { return e.msg }
func (e *clusterError) Unwrap() error { return e.err }

// isClusterError reports whether err says that no cluster can be used (as opposed to
// a cluster that answered and refused one request).
func isClusterError(err error) bool {
	var ce *clusterError
	return errors.As(err, &ce)
}

// kubeconfigSource is where the kubeconfig flags take the cluster from.
type kubeconfigSource struct {
	// files names the kubeconfig: --kubeconfig's path, $KUBECONFIG's list or the
	// default file.
	files string
	// context is the context used ("" when --server alone names the cluster).
	context string
	// server is --server, when given.
	server string
	// inCluster: no kubeconfig, and the command runs in a pod, whose service account
	// is used.
	inCluster bool
}

// describe names the cluster for a message: `context "kind" in /root/.kube/config`.
func (k kubeconfigSource) describe() string {
	switch {
	case k.inCluster:
		return "the pod's service account (no kubeconfig)"
	case k.context == "":
		return "--server"
	}
	return fmt.Sprintf("context %q in %s", k.context, k.files)
}

// locateKubeconfig finds the kubeconfig as kubectl does (--kubeconfig, else $KUBECONFIG,
// else ~/.kube/config; else the pod's service account) and checks that it names a
// context to use, without contacting the cluster. client-go would otherwise go on with
// http://localhost:8080, and the user would read "connection refused" from it.
func locateKubeconfig(kube *genericclioptions.ConfigFlags) (kubeconfigSource, error) {
	var where kubeconfigSource
	if kube.APIServer != nil {
		where.server = *kube.APIServer
	}
	explicit := ""
	if kube.KubeConfig != nil {
		explicit = *kube.KubeConfig
	}
	env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar)
	var paths []string
	switch {
	case explicit != "":
		where.files = explicit
		if _, err := os.Stat(explicit); err != nil {
			return where, &clusterError{msg: fmt.Sprintf("--kubeconfig %s: %v; pass the path of your kubeconfig file", explicit, statReason(err)), err: err}
		}
		paths = []string{explicit}
	case env != "":
		where.files = "$" + clientcmd.RecommendedConfigPathEnvVar + "=" + env
		paths = filepath.SplitList(env)
	default:
		where.files = clientcmd.RecommendedHomeFile
		paths = []string{clientcmd.RecommendedHomeFile}
	}
	found := slices.ContainsFunc(paths, func(p string) bool {
		_, err := os.Stat(p)
		return p != "" && err == nil
	})
	if !found {
		if where.server != "" {
			return where, nil
		}
		if _, err := rest.InClusterConfig(); err == nil {
			where.inCluster = true
			return where, nil
		}
		if env != "" {
			return where, &clusterError{msg: fmt.Sprintf("no kubeconfig: $%s=%s names no file that exists; set %s to your kubeconfig file or pass --kubeconfig FILE",
				clientcmd.RecommendedConfigPathEnvVar, env, clientcmd.RecommendedConfigPathEnvVar)}
		}
		return where, &clusterError{msg: fmt.Sprintf("no kubeconfig: $%s is not set and %s does not exist; set %s or pass --kubeconfig FILE",
			clientcmd.RecommendedConfigPathEnvVar, clientcmd.RecommendedHomeFile, clientcmd.RecommendedConfigPathEnvVar)}
	}
	raw, err := kube.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return where, &clusterError{msg: fmt.Sprintf("kubeconfig %s: %v", where.files, err), err: err}
	}
	flagged := kube.Context != nil && *kube.Context != ""
	where.context = raw.CurrentContext
	if flagged {
		where.context = *kube.Context
	}
	switch {
	case where.context == "" && where.server != "":
		return where, nil
	case where.context == "":
		return where, &clusterError{msg: fmt.Sprintf("kubeconfig %s sets no current context: pass --context NAME or run kubectl config use-context NAME (%s)",
			where.files, contextList(raw))}
	case raw.Contexts[where.context] == nil && flagged:
		return where, &clusterError{msg: fmt.Sprintf("--context %q: no such context in kubeconfig %s (%s)", where.context, where.files, contextList(raw))}
	case raw.Contexts[where.context] == nil:
		return where, &clusterError{msg: fmt.Sprintf("kubeconfig %s: its current context %q does not exist: pass --context NAME or run kubectl config use-context NAME (%s)",
			where.files, where.context, contextList(raw))}
	}
	return where, nil
}

// contextList names a kubeconfig's contexts for a message.
func contextList(raw clientcmdapi.Config) string {
	if len(raw.Contexts) == 0 {
		return "it has no context"
	}
	names := make([]string, 0, len(raw.Contexts))
	for name := range raw.Contexts {
		names = append(names, name)
	}
	slices.Sort(names)
	return "its contexts: " + strings.Join(names, ", ")
}

func statReason(err error) string {
	if errors.Is(err, os.ErrNotExist) {
		return "no such file"
	}
	return err.Error()
}

// checked remembers, per kubeconfig flags (one command), what checkCluster found, so
// that the commands that connect more than once ask once.
var checked sync.Map // *genericclioptions.ConfigFlags -> *clusterError (nil: it answered)

// checkCluster asks the cluster for its version: it answers whoever may connect
// (system:public-info-viewer), so it tells a cluster that does not answer, and
// credentials it refuses, from a working one. Any other answer, even an error status,
// means the cluster is there: the command's own requests report their own refusals.
func checkCluster(kube *genericclioptions.ConfigFlags, where kubeconfigSource, cfg *rest.Config, client kubernetes.Interface) error {
	if v, ok := checked.Load(kube); ok {
		if ce := v.(*clusterError); ce != nil {
			return ce
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterCheckTimeout)
	defer cancel()
	err := client.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error()
	ce := clusterProblem(where, cfg.Host, err)
	checked.Store(kube, ce)
	if ce != nil {
		return ce
	}
	return nil
}

// clusterProblem turns the answer to GET /version into the error a person can act on;
// nil when the cluster answered.
func clusterProblem(where kubeconfigSource, host string, err error) *clusterError {
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return nil
	case apierrors.IsUnauthorized(err):
		return &clusterError{err: err, msg: fmt.Sprintf("the cluster at %s (%s) refused the credentials (401 Unauthorized): log in again (a token or certificate may have expired), or pick another context with --context NAME",
			host, where.describe())}
	case errors.As(err, &status):
		return nil
	}
	detail := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		detail = ue.Err.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		detail = fmt.Sprintf("no answer within %s", clusterCheckTimeout)
	}
	return &clusterError{err: err, msg: fmt.Sprintf("cannot reach the cluster at %s (%s): %s; check that the cluster is running and that this is the one you meant (kubectl config get-contexts lists the contexts; --context NAME or --kubeconfig FILE picks another)",
		host, where.describe(), detail)}
}
