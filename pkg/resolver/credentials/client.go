package credentials

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// NewClientStore is a Store for one-shot commands (the kubectl plugin): it
// GETs the secrets and ServiceAccounts a pod names, each once, with ctx, and
// never lists. Its user needs get, not list, on secrets, and receives no
// secret the pods do not name.
func NewClientStore(ctx context.Context, client kubernetes.Interface, opts Options) (*Store, error) {
	// The command prints its pods' Problems itself: the log repeats them
	// only at -v=2.
	s, err := newStore(klog.FromContext(ctx).V(2), opts)
	if err != nil {
		return nil, err
	}
	secrets := &clientSecrets{gets: getOnce[*v1.Secret]{get: func(ns, name string) (*v1.Secret, error) {
		sec, err := client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		// Keep no more of a secret than an informer's Store would.
		trimmed, _ := trimSecret(sec)
		return trimmed.(*v1.Secret), nil
	}}}
	sas := &getOnce[*v1.ServiceAccount]{get: func(ns, name string) (*v1.ServiceAccount, error) {
		return client.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
	}}
	s.secrets, s.serviceAccounts = secrets, sas.do
	return s, nil
}

// getOnce remembers each answer of get, so a command that looks at many pods
// asks for a shared secret or ServiceAccount once and sees one snapshot.
type getOnce[T any] struct {
	get func(ns, name string) (T, error)

	mu   sync.Mutex
	done map[string]answer[T]
}

type answer[T any] struct {
	obj T
	err error
}

func (g *getOnce[T]) do(ns, name string) (T, error) {
	key := ns + "/" + name
	g.mu.Lock()
	a, ok := g.done[key]
	g.mu.Unlock()
	if ok {
		return a.obj, a.err
	}
	a.obj, a.err = g.get(ns, name)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done == nil {
		g.done = map[string]answer[T]{}
	}
	g.done[key] = a
	return a.obj, a.err
}

// clientSecrets is the secretSource of a NewClientStore Store.
type clientSecrets struct {
	gets getOnce[*v1.Secret]
}

func (c *clientSecrets) get(ns, name string) (*v1.Secret, string) {
	sec, err := c.gets.do(ns, name)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Sprintf("secret %s/%s not found", ns, name)
	case err != nil:
		return nil, fmt.Sprintf("secret %s/%s: %v", ns, name, err)
	}
	return sec, ""
}
