package scheduling

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/internal/placement/app"
)

// TestPlacementMetricsAuth: the companion's /metrics (--metrics-auth
// delegated, the default) answers only bearer tokens the API server
// authenticates (TokenReview) for users it authorises to GET /metrics
// (SubjectAccessReview), asked with the overlay's RBAC; /healthz stays
// anonymous for the kubelet's probe. Plain HTTP gets nothing.
func TestPlacementMetricsAuth(t *testing.T) {
	addr := freeLoopbackAddr(t)
	pc := startPlacementCluster(t, "", func(o *app.Options) { o.MetricsAddr = addr })
	ctx := pc.ctx
	reader := serviceAccountToken(t, pc, "metrics-reader")
	stranger := serviceAccountToken(t, pc, "stranger")
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test-metrics-reader"}, Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	if _, err := pc.cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: pc.ns, Name: "metrics-reader"}},
	}
	if _, err := pc.cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	readerUser := "system:serviceaccount:" + pc.ns + ":metrics-reader"
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: readerUser, NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}}
		got, err := pc.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		return err == nil && got.Status.Allowed, nil
	})
	if err != nil {
		t.Fatalf("%s is not granted GET /metrics: %v", readerUser, err)
	}

	// The certificate is the webhook's, self-signed: the test checks access, not trust.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(url, token string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	base := "https://" + addr
	for _, tc := range []struct {
		name, path, token string
		want              int
	}{
		{name: "no token", path: "/metrics", want: http.StatusUnauthorized},
		{name: "a token the API server does not know", path: "/metrics", token: "not-a-token", want: http.StatusUnauthorized},
		{name: "a user without the permission", path: "/metrics", token: stranger, want: http.StatusForbidden},
		{name: "a user with GET /metrics", path: "/metrics", token: reader, want: http.StatusOK},
		{name: "the probe, anonymous", path: "/healthz", want: http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(base+tc.path, tc.token)
			if code != tc.want {
				t.Fatalf("GET %s: %d %.200q, want %d", tc.path, code, body, tc.want)
			}
			if tc.path == "/metrics" && (code == http.StatusOK) != strings.Contains(body, "archfilter_placement_max_gated_seconds") {
				t.Errorf("GET /metrics %d: the metrics %s", code, map[bool]string{true: "missing", false: "served"}[code == http.StatusOK])
			}
		})
	}
	if code, body := get("http://"+addr+"/metrics", reader); code == http.StatusOK {
		t.Errorf("plain HTTP served /metrics: %.200q", body)
	}
}

// serviceAccountToken creates ServiceAccount name in pc's namespace and
// returns a token for it (TokenRequest).
func serviceAccountToken(t *testing.T, pc *placementCluster, name string) string {
	t.Helper()
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: pc.ns, Name: name}}
	if _, err := pc.cs.CoreV1().ServiceAccounts(pc.ns).Create(pc.ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := pc.cs.CoreV1().ServiceAccounts(pc.ns).CreateToken(pc.ctx, name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(fmt.Errorf("token for %s: %w", name, err))
	}
	return tr.Status.Token
}
