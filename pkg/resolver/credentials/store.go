// Package credentials gives the resolver the registry credentials the kubelet
// would use for a pod: its imagePullSecrets, its ServiceAccount's, a global
// pull secret, a docker config file and kubelet credential-provider plugins,
// tried in that order and matched to registry hosts with kubelet's rules.
package credentials

import (
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
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
	// Clock drives provider caching and file re-reads. Nil means the real clock.
	Clock clock.Clock
}

const defaultProviderTimeout = 10 * time.Second

// Store hands out per-pod credentials from informer caches. Secrets are only
// read through the informers (the scheduler needs list and watch on secrets
// and serviceaccounts), never with direct GETs.
type Store struct {
	secrets         corelisters.SecretLister
	serviceAccounts corelisters.ServiceAccountLister
	synced          []cache.InformerSynced
	global          *types.NamespacedName
	file            *fileKeyring
	providers       []*provider

	mu     sync.Mutex
	parsed map[types.UID]parsedSecret
}

// parsedSecret caches one secret's keyring until its resourceVersion changes.
type parsedSecret struct {
	resourceVersion string
	ring            keyring
	problem         string
}

// NewStore registers Secret and ServiceAccount informers with f (start f
// afterwards) and loads the file and plugin configuration. Errors name the
// offending option.
//
// To bound memory and exposure, the Secret informer keeps only the data of
// pull secrets: other secrets are cached with their metadata and type but no
// data. That transform applies to every user of f's Secret informer.
func NewStore(f informers.SharedInformerFactory, opts Options) (*Store, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.ProviderTimeout == 0 {
		opts.ProviderTimeout = defaultProviderTimeout
	}
	s := &Store{global: opts.GlobalPullSecret, parsed: map[types.UID]parsedSecret{}}
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

	secrets := f.Core().V1().Secrets()
	si := secrets.Informer()
	if err := si.SetTransform(trimSecret); err != nil {
		// Only possible once the informer runs; the transform saves memory, it
		// is not needed for correctness.
		klog.Background().V(2).Info("Secret informer already started; caching full secrets", "err", err)
	}
	if _, err := si.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: s.forgetSecret}); err != nil {
		return nil, fmt.Errorf("watching secrets: %w", err)
	}
	sas := f.Core().V1().ServiceAccounts()
	s.secrets = secrets.Lister()
	s.serviceAccounts = sas.Lister()
	s.synced = []cache.InformerSynced{si.HasSynced, sas.Informer().HasSynced}
	return s, nil
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

// ForPod returns pod's credentials. It reads informer caches and parses each
// secret once per resourceVersion, so repeated calls are cheap; it never does
// I/O. Missing and unusable secrets are skipped and reported by the result's
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
	sa, err := s.serviceAccounts.ServiceAccounts(ns).Get(saName)
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
	sec, err := s.secrets.Secrets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		pc.addProblem(fmt.Sprintf("secret %s/%s not found", ns, name))
		return
	}
	if err != nil {
		pc.addProblem(fmt.Sprintf("secret %s/%s: %v", ns, name, err))
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
	s.mu.Lock()
	defer s.mu.Unlock()
	// Cache only a secret the informer still holds. The informer removes a
	// deleted secret from its store before it calls forgetSecret, and
	// forgetSecret waits for s.mu: checking the store under the lock means a
	// deletion racing this parse either is seen here or forgets the entry
	// after it is written, so no deleted secret stays cached.
	if cur, err := s.secrets.Secrets(sec.Namespace).Get(sec.Name); err == nil && cur.UID == sec.UID {
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

// trimSecret drops what the Store never reads: managed fields, and the data
// of secrets that are not pull secrets.
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
