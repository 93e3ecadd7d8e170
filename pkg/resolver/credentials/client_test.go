package credentials

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
)

// A one-shot command's Store GETs only the secrets the pod names, each once,
// and lists nothing.
func TestClientStore(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	opaque := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "opaque", UID: "o"},
		Type:       v1.SecretTypeOpaque,
		Data:       map[string][]byte{"password": []byte("opaque-secret")},
	}
	client := fake.NewClientset(
		pullSecret("default", "regcred", map[string]string{"registry.example.com": "pod-user:1"}),
		pullSecret("default", "sa-secret", map[string]string{"registry.example.com": "sa-user:2"}),
		pullSecret("default", "unrelated", map[string]string{"registry.example.com": "nobody:3"}),
		pullSecret("kube-system", "global", map[string]string{"registry.example.com": "global-user:4"}),
		opaque,
		serviceAccount("default", "builder", "sa-secret", "regcred"),
	)
	s, err := NewClientStore(ctx, client, Options{GlobalPullSecret: &types.NamespacedName{Namespace: "kube-system", Name: "global"}})
	if err != nil {
		t.Fatal(err)
	}
	pod := podWith("builder", "regcred", "opaque", "missing")
	for range 2 {
		pc := s.ForPod(pod).(*PodCredentials)
		wantCreds := []string{
			"pod imagePullSecret default/regcred → pod-user",
			"serviceaccount default/builder imagePullSecret sa-secret → sa-user",
			"global pull secret kube-system/global → global-user",
		}
		if diff := cmp.Diff(wantCreds, summary(pc.For("registry.example.com"))); diff != "" {
			t.Errorf("credentials (-want,+got):\n%s", diff)
		}
		wantProblems := []string{
			`secret default/opaque has type "Opaque", not kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg`,
			"secret default/missing not found",
		}
		if diff := cmp.Diff(wantProblems, pc.Problems()); diff != "" {
			t.Errorf("Problems() (-want,+got):\n%s", diff)
		}
	}
	var got []string
	for _, a := range client.Actions() {
		name := ""
		if g, ok := a.(clienttesting.GetAction); ok {
			name = g.GetName()
		}
		got = append(got, a.GetVerb()+" "+a.GetResource().Resource+" "+a.GetNamespace()+"/"+name)
	}
	want := []string{
		"get secrets default/regcred",
		"get secrets default/opaque",
		"get secrets default/missing",
		"get serviceaccounts default/builder",
		"get secrets default/sa-secret",
		"get secrets kube-system/global",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("API calls, once each and no list (-want,+got):\n%s", diff)
	}
}
