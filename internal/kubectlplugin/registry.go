package kubectlplugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/pkg/resolver"
	"github.com/archfilter/archfilter/pkg/resolver/credentials"
	"github.com/archfilter/archfilter/pkg/resolver/transport"
)

// registryFlags are how the commands that resolve images reach registries.
type registryFlags struct {
	insecure     []string // hosts reached without TLS verification, or over plain HTTP
	cas          []string // HOST=FILE
	pullSecret   string   // ns/name
	forPod       string   // name of a pod in -n whose pull secrets are used
	dockerConfig string
	timeout      time.Duration
	// args, when the command reads --args, add their registries (TLS, mirrors)
	// and the allowed and denied registries, as the scheduler applies them.
	args *config.ArchFilterArgs
	// newerTags: report and why look for newer tags of blocking images (newertag.go).
	newerTags bool
}

func (f *registryFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringSliceVar(&f.insecure, "insecure-registry", nil, "registry HOST[:PORT] reached without TLS verification or over plain HTTP (repeatable), as a node runtime's insecure registry")
	fs.StringSliceVar(&f.cas, "registry-ca", nil, "HOST[:PORT]=FILE: a PEM bundle trusted for that registry only (repeatable)")
	fs.StringVar(&f.pullSecret, "pull-secret", "", "NAMESPACE/NAME of a pull secret in the cluster to try after the docker config (needs get on that secret)")
	fs.StringVar(&f.forPod, "for-pod", "", "POD in -n whose own pull secrets (and its service account's) are used, as the kubelet would for it")
	fs.StringVar(&f.dockerConfig, "docker-config", "", "docker config.json with registry credentials (default: $DOCKER_CONFIG/config.json, else ~/.docker/config.json, when it exists)")
	fs.DurationVar(&f.timeout, "timeout", resolver.DefaultResolveTimeout, "time limit for resolving one image")
}

// session is one command's resolver and the credentials every request uses.
type session struct {
	resolver    *cliResolver
	credentials resolver.Credentials
	timeout     time.Duration
	// problems are credential sources that could not be used (missing secret...).
	problems []string
}

func (s *session) resolve(ctx context.Context, image string) resolver.Result {
	ctx, cancel := context.WithTimeout(ctx, s.timeout+time.Second)
	defer cancel()
	return s.resolver.Resolve(ctx, resolver.Request{Image: image, Credentials: s.credentials})
}

func (s *session) describe(ctx context.Context, image string) (resolver.Description, error) {
	return s.resolver.Describe(ctx, resolver.Request{Image: image, Credentials: s.credentials})
}

// connectFunc returns a clientset and the namespace of -n or the kubeconfig context.
type connectFunc func() (kubernetes.Interface, string, error)

// newSession builds the resolver and the credentials from the flags. The cluster is only
// contacted for --pull-secret and --for-pod.
func (f *registryFlags) newSession(ctx context.Context, connect connectFunc) (*session, error) {
	if f.pullSecret != "" {
		if _, _, err := f.pullSecretName(); err != nil {
			return nil, err
		}
	}
	var client kubernetes.Interface = fake.NewClientset()
	// The store answers per pod: without --for-pod a stand-in pod with no pull secrets
	// of its own gets the docker config and the global pull secret.
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "kubectl-archfilter"}}
	if f.pullSecret != "" || f.forPod != "" {
		c, ns, err := connect()
		if err != nil {
			return nil, fmt.Errorf("--pull-secret/--for-pod: %w", err)
		}
		client = c
		switch {
		case f.forPod != "":
			if pod, err = client.CoreV1().Pods(ns).Get(ctx, f.forPod, metav1.GetOptions{}); err != nil {
				return nil, fmt.Errorf("--for-pod: pod %s/%s: %w", ns, f.forPod, err)
			}
		default:
			if pod.Namespace, _, err = f.pullSecretName(); err != nil {
				return nil, err
			}
		}
	}
	creds, problems, err := f.credentialsFor(ctx, client, pod)
	if err != nil {
		return nil, err
	}
	var kept []string
	for _, p := range problems {
		// A stand-in pod's service account is not a source the user asked for.
		if f.forPod != "" || !strings.HasPrefix(p, "serviceaccount ") {
			kept = append(kept, p)
		}
	}
	s, err := f.newSessionWith(creds, kept)
	if err != nil {
		return nil, err
	}
	s.resolver.forPod = true
	return s, nil
}

// newSessionWith builds the transport (address guard, TLS per registry) and the resolver.
func (f *registryFlags) newSessionWith(creds resolver.Credentials, problems []string) (*session, error) {
	var registries []transport.Registry
	var allowed, denied []string
	if f.args != nil {
		for _, r := range f.args.Registries {
			registries = append(registries, transport.Registry{Host: r.Host, Insecure: r.Insecure, CAFile: r.CAFile, Mirrors: r.Mirrors})
		}
		allowed, denied = f.args.AllowedRegistries, f.args.DeniedRegistries
	}
	for _, h := range f.insecure {
		registries = append(registries, transport.Registry{Host: h, Insecure: true})
	}
	for _, hf := range f.cas {
		host, file, ok := strings.Cut(hf, "=")
		if !ok || host == "" || file == "" {
			return nil, fmt.Errorf("--registry-ca %q: want HOST=FILE", hf)
		}
		registries = append(registries, transport.Registry{Host: host, CAFile: file})
	}
	// No circuit breaker: a one-shot command gains nothing from failing fast later, and
	// with concurrent first requests to an insecure registry each HTTPS attempt that falls
	// back to HTTP would count as a failure and open it.
	tr, err := transport.New(transport.Options{Registries: registries, Allowed: allowed, Denied: denied, Breaker: transport.Breaker{FailureThreshold: -1}})
	if err != nil {
		return nil, fmt.Errorf("--insecure-registry/--registry-ca: %w", err)
	}
	r, err := resolver.New(resolver.Options{
		ResolveTimeout: f.timeout,
		Transport:      tr.RoundTripper(),
		Endpoints:      tr.Endpoints,
	})
	if err != nil {
		return nil, err
	}
	return &session{resolver: &cliResolver{Resolver: r}, credentials: creds, timeout: f.timeout, problems: problems}, nil
}

// cliResolver is the resolver with the fix a person can apply added to its errors, as
// the commands print them; the resolver's own messages (the scheduler's events) stay
// as they are. Each error still unwraps to the *resolver.Error.
type cliResolver struct {
	*resolver.Resolver
	// forPod: --for-pod can supply credentials (inspect, check); why and report
	// already use each pod's own.
	forPod bool
}

func (r *cliResolver) Resolve(ctx context.Context, req resolver.Request) resolver.Result {
	res := r.Resolver.Resolve(ctx, req)
	res.Err = r.explain(res.Err)
	return res
}

func (r *cliResolver) Describe(ctx context.Context, req resolver.Request) (resolver.Description, error) {
	d, err := r.Resolver.Describe(ctx, req)
	return d, r.explain(err)
}

func (r *cliResolver) OpenRepository(ctx context.Context, req resolver.Request) (*resolver.Repository, error) {
	repo, err := r.Resolver.OpenRepository(ctx, req)
	return repo, r.explain(err)
}

// explainedError is a resolution failure with what to do about it.
type explainedError struct {
	msg string
	err *resolver.Error
}

func (e *explainedError) Error() string { return e.msg }
func (e *explainedError) Unwrap() error { return e.err }

// explain adds to a registry's refusal the flags that give credentials, and says of an
// invalid reference why it is invalid (the resolver's message names an empty registry
// for it). Other errors are returned as they are.
func (r *cliResolver) explain(err error) error {
	var re *resolver.Error
	if err == nil || !errors.As(err, &re) {
		return err
	}
	switch re.Reason {
	case resolver.ReasonInvalidReference:
		why := re.Err
		if inner := errors.Unwrap(why); inner != nil {
			why = inner // the parser's reason, without the resolver's repetition of the image
		}
		return &explainedError{err: re, msg: fmt.Sprintf("invalid image reference %q: %v (want [REGISTRY[:PORT]/]REPOSITORY[:TAG][@DIGEST], the repository in lower case)", re.Image, why)}
	case resolver.ReasonUnauthorized:
		return &explainedError{err: re, msg: err.Error() + "; " + r.credentialsHint(re)}
	}
	return err
}

// credentialsHint says which flags give a registry credentials, for a 401 or 403.
func (r *cliResolver) credentialsHint(re *resolver.Error) string {
	flags := fmt.Sprintf("--docker-config FILE (a docker config.json with an entry for %s) or --pull-secret NAMESPACE/NAME (a pull secret in the cluster)", re.Registry)
	if r.forPod {
		flags = fmt.Sprintf("--docker-config FILE (a docker config.json with an entry for %s), --pull-secret NAMESPACE/NAME (a pull secret in the cluster) or --for-pod POD (the pull secrets a pod in -n uses)", re.Registry)
	}
	var hint string
	if re.CredentialSource == "anonymous" {
		hint = fmt.Sprintf("%s refused anonymous access: give credentials with %s", re.Registry, flags)
	} else {
		hint = fmt.Sprintf("%s refused %s: check that it holds a credential for %s that may pull this repository, or give another with %s", re.Registry, re.CredentialSource, re.Registry, flags)
	}
	if re.Registry == "index.docker.io" {
		hint += "; Docker Hub answers 401 also for a repository that does not exist: check the image's name"
	}
	return hint
}

func (f *registryFlags) pullSecretName() (ns, name string, err error) {
	ns, name, ok := strings.Cut(f.pullSecret, "/")
	if !ok || ns == "" || name == "" {
		example := "NAMESPACE/NAME"
		if !ok && f.pullSecret != "" {
			example = "NAMESPACE/" + f.pullSecret // a secret's name alone
		}
		return "", "", fmt.Errorf("--pull-secret %q: want NAMESPACE/NAME, the secret's namespace and name, e.g. --pull-secret %s", f.pullSecret, example)
	}
	return ns, name, nil
}

// newStore builds the scheduler's credential store for a one-shot command, with the
// docker config file and --pull-secret as the global pull secret. It GETs only the
// secrets and service accounts the pods it is asked about name: the plugin needs get,
// never list, on secrets.
func (f *registryFlags) newStore(ctx context.Context, client kubernetes.Interface) (*credentials.Store, error) {
	opts := credentials.Options{DockerConfigFile: f.dockerConfigPath()}
	if f.pullSecret != "" {
		ns, name, err := f.pullSecretName()
		if err != nil {
			return nil, err
		}
		opts.GlobalPullSecret = &types.NamespacedName{Namespace: ns, Name: name}
	}
	store, err := credentials.NewClientStore(ctx, client, opts)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	return store, nil
}

// credentialsFor reuses the scheduler's credential rules for pod: its own pull secrets
// and its service account's, --pull-secret and the docker config file.
func (f *registryFlags) credentialsFor(ctx context.Context, client kubernetes.Interface, pod *v1.Pod) (resolver.Credentials, []string, error) {
	store, err := f.newStore(ctx, client)
	if err != nil {
		return nil, nil, err
	}
	creds := store.ForPod(pod)
	var problems []string
	if pc, ok := creds.(*credentials.PodCredentials); ok {
		problems = pc.Problems()
	}
	return creds, problems, nil
}

func (f *registryFlags) dockerConfigPath() string {
	if f.dockerConfig != "" {
		return f.dockerConfig
	}
	dir := os.Getenv("DOCKER_CONFIG")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".docker")
	}
	p := filepath.Join(dir, "config.json")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}
