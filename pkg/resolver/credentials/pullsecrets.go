package credentials

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/sets"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// pullSecretTypes are the secret types kubelet takes registry credentials from.
var pullSecretTypes = []v1.SecretType{v1.SecretTypeDockerConfigJson, v1.SecretTypeDockercfg}

// pullSecretSelector asks the API server for secrets of one type only. The
// server filters secrets on "type": k8s.io/kubernetes
// pkg/registry/core/secret/strategy.go SelectableFields adds it to the
// default metadata fields (and has since Kubernetes 1.0).
func pullSecretSelector(t v1.SecretType) string {
	return fields.OneTermEqualSelector("type", string(t)).String()
}

// typedInformer is one watch: pull secrets of one type in one namespace
// ("" for all).
type typedInformer struct {
	typ      v1.SecretType
	informer cache.SharedIndexInformer
}

// pullSecrets holds only pull secrets, so that TLS keys, tokens and the rest
// of a cluster's secrets never reach the process. Field selectors have no OR,
// hence one informer per pull secret type and per namespace read. The
// informers are private to the Store: nothing that expects every secret can
// share them.
type pullSecrets struct {
	// namespaces are the namespaces read; nil means all.
	namespaces sets.Set[string]
	informers  []typedInformer
}

func newPullSecrets(client kubernetes.Interface, namespaces []string) *pullSecrets {
	p := &pullSecrets{}
	scopes := []string{metav1.NamespaceAll}
	if len(namespaces) > 0 {
		p.namespaces = sets.New(namespaces...)
		scopes = sets.List(p.namespaces)
	}
	for _, ns := range scopes {
		for _, typ := range pullSecretTypes {
			selector := pullSecretSelector(typ)
			inf := coreinformers.NewFilteredSecretInformer(client, ns, 0, cache.Indexers{}, func(o *metav1.ListOptions) {
				o.FieldSelector = selector
			})
			p.informers = append(p.informers, typedInformer{typ: typ, informer: inf})
		}
	}
	return p
}

// get returns secret ns/name if it is a pull secret the Store reads, or a
// problem that names the secret and says why it is not used.
func (p *pullSecrets) get(ns, name string) (*v1.Secret, string) {
	if p.namespaces != nil && !p.namespaces.Has(ns) {
		return nil, fmt.Sprintf("secret %s/%s not read: secrets are read only in namespaces %s (secretNamespaces)",
			ns, name, strings.Join(sets.List(p.namespaces), ", "))
	}
	key := ns + "/" + name
	for _, ti := range p.informers {
		obj, ok, err := ti.informer.GetIndexer().GetByKey(key)
		if err != nil || !ok {
			continue
		}
		// The API server filtered by type already; checking again keeps a
		// client that ignores field selectors (fake clientsets) honest.
		if sec, isSecret := obj.(*v1.Secret); isSecret && sec.Type == ti.typ {
			return sec, ""
		}
	}
	return nil, fmt.Sprintf("secret %s/%s not found among pull secrets (only secrets of type %s are read)",
		ns, name, typeList())
}

func typeList() string {
	names := make([]string, 0, len(pullSecretTypes))
	for _, t := range pullSecretTypes {
		names = append(names, string(t))
	}
	return strings.Join(names, " or ")
}

// run starts the informers; they stop when stop is closed.
func (p *pullSecrets) run(stop <-chan struct{}) {
	for _, ti := range p.informers {
		go ti.informer.Run(stop)
	}
}

func (p *pullSecrets) hasSynced() bool {
	return !slices.ContainsFunc(p.informers, func(ti typedInformer) bool { return !ti.informer.HasSynced() })
}

// len is how many secrets the informers hold.
func (p *pullSecrets) len() int {
	n := 0
	for _, ti := range p.informers {
		n += len(ti.informer.GetIndexer().ListKeys())
	}
	return n
}
