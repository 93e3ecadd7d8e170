package serving

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// The caches of the API server's answers, kube-scheduler's defaults.
const (
	tokenCacheTTL  = 10 * time.Second
	allowCacheTTL  = 10 * time.Second
	denyCacheTTL   = 10 * time.Second
	reviewsTimeout = 10 * time.Second
)

// Delegated guards handlers with the API server's answers: a bearer token
// is authenticated by a TokenReview (tokenreviews: create), the request then
// authorised by a SubjectAccessReview (subjectaccessreviews: create) for its
// verb on its path, a non-resource URL: GET /metrics needs a ClusterRole with
// nonResourceURLs [/metrics], verbs [get], e.g. the bootstrap
// system:monitoring.
type Delegated struct {
	authn authenticator.Request
	authz authorizer.Authorizer
}

// NewDelegated asks client's API server. Anonymous requests are refused.
func NewDelegated(client kubernetes.Interface) (*Delegated, error) {
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		TokenAccessReviewClient:  client.AuthenticationV1(),
		TokenAccessReviewTimeout: reviewsTimeout,
		WebhookRetryBackoff:      options.DefaultAuthWebhookRetryBackoff(),
		CacheTTL:                 tokenCacheTTL,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("metrics authentication: %w", err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: client.AuthorizationV1(),
		AllowCacheTTL:             allowCacheTTL,
		DenyCacheTTL:              denyCacheTTL,
		WebhookRetryBackoff:       options.DefaultAuthWebhookRetryBackoff(),
	}.New()
	if err != nil {
		return nil, fmt.Errorf("metrics authorization: %w", err)
	}
	return &Delegated{authn: authn, authz: authz}, nil
}

// Wrap serves next only to authenticated and authorised requests: 401
// without a valid token, 403 when the user may not, and neither says more.
func (d *Delegated) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := d.authn.AuthenticateRequest(r)
		if err != nil || !ok {
			if err != nil {
				klog.FromContext(r.Context()).V(2).Info("Metrics request not authenticated", "remote", r.RemoteAddr, "err", err)
			}
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := authorizer.AttributesRecord{
			User:            resp.User,
			Verb:            strings.ToLower(r.Method),
			Path:            r.URL.Path,
			ResourceRequest: false,
		}
		decision, reason, err := d.authz.Authorize(r.Context(), attrs)
		if err != nil || decision != authorizer.DecisionAllow {
			klog.FromContext(r.Context()).V(2).Info("Metrics request forbidden", "user", resp.User.GetName(), "path", r.URL.Path, "reason", reason, "err", err)
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
