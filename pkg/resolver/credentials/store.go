// Package credentials gives the resolver the registry credentials the kubelet
// would use for a pod: its imagePullSecrets, its ServiceAccount's, a global
// pull secret, a docker config file and kubelet credential-provider plugins,
// tried in that order and matched to registry hosts with kubelet's rules.
package credentials

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/archfilter/archfilter/pkg/resolver"
)

// Options configure a Store; every source is optional.
type Options struct {
	// GlobalPullSecret is tried for every pod after the pod's own secrets.
	GlobalPullSecret *types.NamespacedName
	// DockerConfigFile is a docker config.json (or legacy .dockercfg) mounted
	// into the scheduler. It is re-read when it changes.
	DockerConfigFile string
	// CredentialProviderConfig is a kubelet CredentialProviderConfig file whose
	// plugins run from CredentialProviderBinDir. Set both or neither.
	CredentialProviderConfig string
	CredentialProviderBinDir string
	// ProviderTimeout bounds one plugin run. Zero means 10s.
	ProviderTimeout time.Duration
	// SecretNamespaces, when set, are the only namespaces whose pull secrets
	// are read, for clusters that forbid reading secrets cluster-wide. A pod
	// elsewhere gets only the global pull secret (which must be in one of
	// them: validation checks it), the docker config file and the plugins.
	// Nil means every namespace. NewClientStore, which reads only what a pod
	// names, ignores it.
	SecretNamespaces []string
	// Clock drives provider caching and file re-reads. Nil means the real clock.
	Clock clock.Clock
}

const defaultProviderTimeout = 10 * time.Second

// Store hands out per-pod credentials. A long-running process's Store
// (NewStore) reads informer caches: list and watch on pull secrets and
// serviceaccounts, never direct GETs. A one-shot command's (NewClientStore)
// GETs only what a pod names.
type Store struct {
	secrets         secretSource
	serviceAccounts serviceAccountSource
	synced          []cache.InformerSynced
	global          *types.NamespacedName
	file            *fileKeyring
	providers       []*provider

	// logger reports unusable secrets, by namespace/name and reason.
	logger klog.Logger

	mu     sync.Mutex
	parsed map[types.UID]parsedSecret
}

// parsedSecret caches one secret's keyring until its resourceVersion changes.
type parsedSecret struct {
	resourceVersion string
	ring            keyring
	problem         string
}

// secretSource finds a secret a pod names. A problem names the secret and
// says why it is not used.
type secretSource interface {
	get(ns, name string) (*v1.Secret, string)
}

// serviceAccountSource finds a ServiceAccount; a missing one is a NotFound
// error.
type serviceAccountSource func(ns, name string) (*v1.ServiceAccount, error)

// NewStore starts the Store's own pull-secret informers on client, which
// run until ctx is done, registers a ServiceAccount informer with f (start f
// afterwards) and loads the file and plugin configuration. Errors name the
// offending option.
func NewStore(ctx context.Context, client kubernetes.Interface, f informers.SharedInformerFactory, opts Options) (*Store, error) {
	s, err := newStore(klog.FromContext(ctx), opts)
	if err != nil {
		return nil, err
	}
	secrets := newPullSecrets(client, opts.SecretNamespaces)
	for _, ti := range secrets.informers {
		// The informers are new, so neither call can fail on a started one.
		if err := ti.informer.SetTransform(trimSecret); err != nil {
			return nil, fmt.Errorf("watching secrets: %w", err)
		}
		if _, err := ti.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: s.forgetSecret}); err != nil {
			return nil, fmt.Errorf("watching secrets: %w", err)
		}
	}
	secrets.run(ctx.Done())
	s.secrets = secrets
	sas := f.Core().V1().ServiceAccounts()
	lister := sas.Lister()
	s.serviceAccounts = func(ns, name string) (*v1.ServiceAccount, error) {
		return lister.ServiceAccounts(ns).Get(name)
	}
	s.synced = []cache.InformerSynced{secrets.hasSynced, sas.Informer().HasSynced}
	return s, nil
}

// newStore loads what every Store shares: the global pull secret, the docker
// config file and the credential provider plugins.
func newStore(logger klog.Logger, opts Options) (*Store, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.ProviderTimeout == 0 {
		opts.ProviderTimeout = defaultProviderTimeout
	}
	s := &Store{global: opts.GlobalPullSecret, logger: logger, parsed: map[types.UID]parsedSecret{}}
	if opts.DockerConfigFile != "" {
		fk, err := newFileKeyring(opts.DockerConfigFile, opts.Clock)
		if err != nil {
			return nil, fmt.Errorf("dockerConfigFile: %w", err)
		}
		s.file = fk
	}
	if (opts.CredentialProviderConfig == "") != (opts.CredentialProviderBinDir == "") {
		return nil, fmt.Errorf("credentialProviderConfig and credentialProviderBinDir: set both or neither")
	}
	if opts.CredentialProviderConfig != "" {
		ps, err := loadProviders(opts.CredentialProviderConfig, opts.CredentialProviderBinDir, opts.ProviderTimeout, opts.Clock)
		if err != nil {
			return nil, fmt.Errorf("credentialProviderConfig: %w", err)
		}
		s.providers = ps
	}
	return s, nil
}

// CachedSecrets is how many secrets a NewStore Store's informers hold: every
// secret the API server sent, less deletions (zero for NewClientStore). For
// tests and diagnostics: with 10 000 other secrets in the cluster it stays
// the number of pull secrets.
func (s *Store) CachedSecrets() int {
	if ps, ok := s.secrets.(*pullSecrets); ok {
		return ps.len()
	}
	return 0
}

// HasSynced reports whether the informer caches are filled; before that every
// secret looks missing.
func (s *Store) HasSynced() bool {
	for _, synced := range s.synced {
		if !synced() {
			return false
		}
	}
	return true
}

// ForPod returns pod's credentials. It parses each secret once per
// resourceVersion, so repeated calls are cheap; a NewStore Store reads
// informer caches and never does I/O. Missing and unusable secrets are skipped and reported by the result's
// Problems.
func (s *Store) ForPod(pod *v1.Pod) resolver.Credentials {
	pc := &PodCredentials{}
	if !s.HasSynced() {
		pc.addProblem("secrets and serviceaccounts are not synced yet")
	}
	ns := pod.Namespace
	seen := sets.New[string]()
	for _, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" || seen.Has(ref.Name) {
			continue
		}
		seen.Insert(ref.Name)
		s.addSecret(pc, ns, ref.Name, fmt.Sprintf("pod imagePullSecret %s/%s", ns, ref.Name))
	}

	// The ServiceAccount admission plugin copies these into the pod when it
	// is created; reading them again covers secrets added later. A name the
	// pod already lists is the same secret, tried once.
	saName := pod.Spec.ServiceAccountName
	if saName == "" {
		saName = "default"
	}
	sa, err := s.serviceAccounts(ns, saName)
	switch {
	case apierrors.IsNotFound(err):
		pc.addProblem(fmt.Sprintf("serviceaccount %s/%s not found", ns, saName))
	case err != nil:
		pc.addProblem(fmt.Sprintf("serviceaccount %s/%s: %v", ns, saName, err))
	default:
		for _, ref := range sa.ImagePullSecrets {
			if ref.Name == "" || seen.Has(ref.Name) {
				continue
			}
			seen.Insert(ref.Name)
			s.addSecret(pc, ns, ref.Name, fmt.Sprintf("serviceaccount %s/%s imagePullSecret %s", ns, saName, ref.Name))
		}
	}

	if g := s.global; g != nil && !(g.Namespace == ns && seen.Has(g.Name)) {
		s.addSecret(pc, g.Namespace, g.Name, fmt.Sprintf("global pull secret %s/%s", g.Namespace, g.Name))
	}
	if s.file != nil {
		ring, problem := s.file.current()
		pc.sources = append(pc.sources, source{name: "docker config file " + s.file.path, ring: ring})
		if problem != "" {
			pc.addProblem(problem)
		}
	}
	pc.providers = s.providers
	return pc
}

func (s *Store) addSecret(pc *PodCredentials, ns, name, sourceName string) {
	sec, problem := s.secrets.get(ns, name)
	if sec == nil {
		pc.addProblem(problem)
		return
	}
	p := s.parse(sec)
	if p.problem != "" {
		pc.addProblem(p.problem)
	}
	if len(p.ring) > 0 {
		pc.sources = append(pc.sources, source{name: sourceName, ring: p.ring})
	}
}

func (s *Store) parse(sec *v1.Secret) parsedSecret {
	s.mu.Lock()
	p, ok := s.parsed[sec.UID]
	s.mu.Unlock()
	if ok && p.resourceVersion == sec.ResourceVersion {
		return p
	}
	p = parsedSecret{resourceVersion: sec.ResourceVersion}
	p.ring, p.problem = parseSecret(sec)
	if p.problem != "" {
		// Once per version of the secret (parsed is its cache); the problem
		// names it and never quotes its data.
		s.logger.Info("Skipping an unusable pull secret", "secret", klog.KObj(sec), "reason", p.problem)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Cache only a secret the informer still holds. The informer removes a
	// deleted secret from its store before it calls forgetSecret, and
	// forgetSecret waits for s.mu: checking the store under the lock means a
	// deletion racing this parse either is seen here or forgets the entry
	// after it is written, so no deleted secret stays cached.
	if cur, _ := s.secrets.get(sec.Namespace, sec.Name); cur != nil && cur.UID == sec.UID {
		s.parsed[sec.UID] = p
	}
	return p
}

func (s *Store) forgetSecret(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if sec, ok := obj.(*v1.Secret); ok {
		s.mu.Lock()
		delete(s.parsed, sec.UID)
		s.mu.Unlock()
	}
}

// parseSecret reads a pull secret of either type. The problem text names the
// secret but never quotes its data.
func parseSecret(sec *v1.Secret) (keyring, string) {
	var (
		key   string
		parse func([]byte) (keyring, error)
	)
	switch sec.Type {
	case v1.SecretTypeDockerConfigJson:
		key, parse = v1.DockerConfigJsonKey, parseDockerConfigJSON
	case v1.SecretTypeDockercfg:
		key, parse = v1.DockerConfigKey, parseDockercfg
	default:
		return nil, fmt.Sprintf("secret %s/%s has type %q, not %s or %s", sec.Namespace, sec.Name, sec.Type, v1.SecretTypeDockerConfigJson, v1.SecretTypeDockercfg)
	}
	b := sec.Data[key]
	if len(b) == 0 {
		return nil, fmt.Sprintf("secret %s/%s has no %s", sec.Namespace, sec.Name, key)
	}
	ring, err := parse(b)
	if err != nil {
		return nil, fmt.Sprintf("secret %s/%s: %s is %v", sec.Namespace, sec.Name, key, err)
	}
	return ring, ""
}

// trimSecret drops what the Store never reads: managed fields and data keys
// other than the credentials. The informers only receive pull secrets; a
// secret of another type (from a client that ignores field selectors) keeps
// no data.
func trimSecret(obj any) (any, error) {
	sec, ok := obj.(*v1.Secret)
	if !ok {
		return obj, nil
	}
	sec.ManagedFields = nil
	switch sec.Type {
	case v1.SecretTypeDockerConfigJson:
		sec.Data = map[string][]byte{v1.DockerConfigJsonKey: sec.Data[v1.DockerConfigJsonKey]}
	case v1.SecretTypeDockercfg:
		sec.Data = map[string][]byte{v1.DockerConfigKey: sec.Data[v1.DockerConfigKey]}
	default:
		sec.Data = nil
	}
	sec.StringData = nil
	return sec, nil
}
