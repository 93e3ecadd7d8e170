package credentials

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/archfilter/archfilter/pkg/resolver"
)

// pullSecret builds a kubernetes.io/dockerconfigjson secret whose auths map
// registry keys to "user:password".
func pullSecret(ns, name string, auths map[string]string) *v1.Secret {
	cfg := map[string]map[string]map[string]string{"auths": {}}
	for k, up := range auths {
		u, p, _ := strings.Cut(up, ":")
		cfg["auths"][k] = map[string]string{"username": u, "password": p}
	}
	b, _ := json.Marshal(cfg)
	return &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name)},
		Type:       v1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{v1.DockerConfigJsonKey: b},
	}
}

// dockercfgSecret builds a legacy kubernetes.io/dockercfg secret.
func dockercfgSecret(ns, name, key, user, pass string) *v1.Secret {
	b, _ := json.Marshal(map[string]map[string]string{key: {"username": user, "password": pass}})
	return &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name)},
		Type:       v1.SecretTypeDockercfg,
		Data:       map[string][]byte{v1.DockerConfigKey: b},
	}
}

func serviceAccount(ns, name string, secrets ...string) *v1.ServiceAccount {
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for _, s := range secrets {
		sa.ImagePullSecrets = append(sa.ImagePullSecrets, v1.LocalObjectReference{Name: s})
	}
	return sa
}

func podWith(sa string, secrets ...string) *v1.Pod {
	p := st.MakePod().Namespace("default").Name("app").Obj()
	p.Spec.ServiceAccountName = sa
	for _, s := range secrets {
		p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: s})
	}
	return p
}

// startStore builds a Store over a fake clientset holding objs and waits for
// its informers.
func startStore(t *testing.T, opts Options, objs ...runtime.Object) (*Store, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := NewStore(ctx, client, f, opts)
	if err != nil {
		cancel()
		t.Fatalf("NewStore: %v", err)
	}
	f.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		f.Shutdown()
	})
	f.WaitForCacheSync(ctx.Done())
	// The Store's own pull-secret informers are not f's.
	if !cache.WaitForCacheSync(ctx.Done(), s.HasSynced) {
		t.Fatal("store not synced")
	}
	return s, client
}

// newStoreWith builds a Store over an empty fake clientset, for option
// errors; its informers stop with the test.
func newStoreWith(t *testing.T, opts Options) (*Store, error) {
	t.Helper()
	client := fake.NewClientset()
	return NewStore(t.Context(), client, informers.NewSharedInformerFactory(client, 0), opts)
}

// summary is what a test compares: the source and user of each credential.
func summary(cs []resolver.Credential) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Source+" → "+c.Username)
	}
	return out
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Every source, in kubelet order, each secret's matching entries most
// specific first.
func TestForPodSourcesAndOrder(t *testing.T) {
	dockerConfig := writeFile(t, "config.json", `{"auths":{"registry.example.com":{"username":"file-user","password":"f"}}}`)
	s, _ := startStore(t, Options{
		GlobalPullSecret: &types.NamespacedName{Namespace: "kube-system", Name: "archfilter-pull-secret"},
		DockerConfigFile: dockerConfig,
	},
		pullSecret("default", "regcred", map[string]string{
			"registry.example.com":      "pod-user:1",
			"registry.example.com/team": "pod-team-user:2",
			"other.example.com":         "other-user:3",
		}),
		dockercfgSecret("default", "legacy", "https://registry.example.com", "legacy-user", "4"),
		pullSecret("default", "builder-secret", map[string]string{"*.example.com": "sa-user:5"}),
		serviceAccount("default", "builder", "builder-secret", "regcred"),
		pullSecret("kube-system", "archfilter-pull-secret", map[string]string{"registry.example.com": "global-user:6"}),
	)
	pc := s.ForPod(podWith("builder", "regcred", "legacy"))
	got := summary(pc.For("registry.example.com"))
	want := []string{
		"pod imagePullSecret default/regcred → pod-team-user",
		"pod imagePullSecret default/regcred → pod-user",
		"pod imagePullSecret default/legacy → legacy-user",
		"serviceaccount default/builder imagePullSecret builder-secret → sa-user",
		"global pull secret kube-system/archfilter-pull-secret → global-user",
		"docker config file " + dockerConfig + " → file-user",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("For(registry.example.com) (-want,+got):\n%s", diff)
	}
	// With a repository, kubelet's path rule applies.
	got = summary(pc.For("registry.example.com/other/app"))
	want = append(want[:1:1], want[2:]...)
	want[0] = "pod imagePullSecret default/regcred → pod-user"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("For(registry.example.com/other/app) (-want,+got):\n%s", diff)
	}
	if got := summary(pc.For("unrelated.io")); got != nil {
		t.Errorf("For(unrelated.io) = %v, want none", got)
	}
	if p := pc.(*PodCredentials).Problems(); len(p) != 0 {
		t.Errorf("Problems() = %v, want none", p)
	}
}

func TestForPodCredentialFields(t *testing.T) {
	sec := pullSecret("default", "regcred", map[string]string{"registry.example.com": "alice:s3cret"})
	s, _ := startStore(t, Options{}, sec, serviceAccount("default", "default"))
	cs := s.ForPod(podWith("", "regcred")).For("registry.example.com")
	if len(cs) != 1 {
		t.Fatalf("got %d credentials, want 1", len(cs))
	}
	c := cs[0]
	if c.Username != "alice" || c.Password != "s3cret" || c.Source != "pod imagePullSecret default/regcred" {
		t.Errorf("got %+v", c)
	}
	if len(c.ID) != 64 || strings.Contains(c.ID, "s3cret") {
		t.Errorf("ID %q is not an opaque hash", c.ID)
	}
}

func TestDockerHubAliases(t *testing.T) {
	s, _ := startStore(t, Options{},
		pullSecret("default", "hub", map[string]string{"https://index.docker.io/v1/": "v1-key:1"}),
		pullSecret("default", "hub2", map[string]string{"docker.io": "bare-key:2"}),
		pullSecret("default", "hub3", map[string]string{"registry-1.docker.io": "registry-1-key:3"}),
		pullSecret("default", "hub4", map[string]string{"index.docker.io": "index-key:4"}),
		serviceAccount("default", "default"),
	)
	pc := s.ForPod(podWith("", "hub", "hub2", "hub3", "hub4"))
	want := []string{"v1-key", "bare-key", "registry-1-key", "index-key"}
	for _, registry := range []string{"index.docker.io", "docker.io", "registry-1.docker.io", "index.docker.io/library/nginx"} {
		var got []string
		for _, c := range pc.For(registry) {
			got = append(got, c.Username)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("For(%q) (-want,+got):\n%s", registry, diff)
		}
	}
}

func TestForPodProblems(t *testing.T) {
	opaque := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "opaque", UID: "o"},
		Type:       v1.SecretTypeOpaque,
		Data:       map[string][]byte{"password": []byte("opaque-secret")},
	}
	broken := pullSecret("default", "broken", nil)
	broken.Data[v1.DockerConfigJsonKey] = []byte(`{"auths":{"r.example.com":{"password":"broken-secret"`)
	empty := pullSecret("default", "empty", nil)
	delete(empty.Data, v1.DockerConfigJsonKey)
	s, _ := startStore(t, Options{GlobalPullSecret: &types.NamespacedName{Namespace: "kube-system", Name: "gone"}},
		opaque, broken, empty, serviceAccount("default", "builder", "sa-missing"))
	pc := s.ForPod(podWith("builder", "regcred", "opaque", "broken", "empty")).(*PodCredentials)
	want := []string{
		"secret default/regcred not found among pull secrets (only secrets of type kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg are read)",
		"secret default/opaque not found among pull secrets (only secrets of type kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg are read)",
		"secret default/broken: .dockerconfigjson is not valid docker config JSON: not JSON (syntax error at byte 53)",
		"secret default/empty has no .dockerconfigjson",
		"secret default/sa-missing not found among pull secrets (only secrets of type kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg are read)",
		"secret kube-system/gone not found among pull secrets (only secrets of type kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg are read)",
	}
	if diff := cmp.Diff(want, pc.Problems()); diff != "" {
		t.Errorf("Problems() (-want,+got):\n%s", diff)
	}
	if got := pc.For("r.example.com"); len(got) != 0 {
		t.Errorf("got credentials %v", summary(got))
	}

	pc = s.ForPod(podWith("nobody")).(*PodCredentials)
	if diff := cmp.Diff([]string{"serviceaccount default/nobody not found", "secret kube-system/gone not found among pull secrets (only secrets of type kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg are read)"}, pc.Problems()); diff != "" {
		t.Errorf("Problems() (-want,+got):\n%s", diff)
	}
}

// A secret named by both the pod and its ServiceAccount is one source.
func TestForPodDeduplicates(t *testing.T) {
	s, _ := startStore(t, Options{GlobalPullSecret: &types.NamespacedName{Namespace: "default", Name: "regcred"}},
		pullSecret("default", "regcred", map[string]string{"registry.example.com": "u:p"}),
		pullSecret("default", "copy", map[string]string{"registry.example.com": "u:p"}),
		serviceAccount("default", "default", "regcred"),
	)
	got := summary(s.ForPod(podWith("", "regcred", "regcred", "copy")).For("registry.example.com"))
	if diff := cmp.Diff([]string{"pod imagePullSecret default/regcred → u"}, got); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}

// Secrets are read through the informer: an update shows up without a new
// Store, and a deletion is reported.
func TestForPodFollowsSecretUpdates(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	sec := pullSecret("default", "regcred", map[string]string{"registry.example.com": "u:old"})
	sec.ResourceVersion = "1"
	s, client := startStore(t, Options{}, sec, serviceAccount("default", "default"))
	pod := podWith("", "regcred")
	first := s.ForPod(pod).For("registry.example.com")
	if len(first) != 1 || first[0].Password != "old" {
		t.Fatalf("got %v", summary(first))
	}

	updated := pullSecret("default", "regcred", map[string]string{"registry.example.com": "u:new"})
	updated.ResourceVersion = "2"
	if _, err := client.CoreV1().Secrets("default").Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the new password", func() bool {
		cs := s.ForPod(pod).For("registry.example.com")
		return len(cs) == 1 && cs[0].Password == "new" && cs[0].ID != first[0].ID
	})

	if err := client.CoreV1().Secrets("default").Delete(ctx, "regcred", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the deletion", func() bool {
		pc := s.ForPod(pod).(*PodCredentials)
		return len(pc.For("registry.example.com")) == 0 && cmp.Equal(pc.Problems(), []string{"secret default/regcred not found among pull secrets (only secrets of type kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg are read)"})
	})
	// The informer updates its store before it calls the delete handler, so
	// the lister can report the deletion a moment before the cache forgets it.
	poll(t, "the parsed secret forgotten", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.parsed) == 0
	})
}

// Repeated ForPod calls reuse the parsed keyring.
func TestForPodCachesParsing(t *testing.T) {
	s, _ := startStore(t, Options{},
		pullSecret("default", "regcred", map[string]string{"registry.example.com": "u:p"}),
		serviceAccount("default", "default"))
	pod := podWith("", "regcred")
	a := s.ForPod(pod).(*PodCredentials)
	b := s.ForPod(pod).(*PodCredentials)
	if &a.sources[0].ring[0] != &b.sources[0].ring[0] {
		t.Error("the secret was parsed again")
	}
}

// The informer keeps only pull-secret data.
func TestTrimSecret(t *testing.T) {
	opaque := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Type:       v1.SecretTypeOpaque,
		Data:       map[string][]byte{"password": []byte("x")},
	}
	got, _ := trimSecret(opaque)
	if sec := got.(*v1.Secret); sec.Data != nil || sec.ManagedFields != nil {
		t.Errorf("opaque secret kept %v", sec)
	}
	pull := pullSecret("default", "regcred", map[string]string{"r.example.com": "u:p"})
	pull.Data["extra"] = []byte("x")
	got, _ = trimSecret(pull)
	if sec := got.(*v1.Secret); len(sec.Data) != 1 || len(sec.Data[v1.DockerConfigJsonKey]) == 0 {
		t.Errorf("pull secret data = %v", sec.Data)
	}
}

func TestDockerConfigFileReload(t *testing.T) {
	path := writeFile(t, "config.json", `{"auths":{"registry.example.com":{"username":"one","password":"p"}}}`)
	clk := newFakeClock()
	s, _ := startStore(t, Options{DockerConfigFile: path, Clock: clk}, serviceAccount("default", "default"))
	user := func() string {
		cs := s.ForPod(podWith("")).For("registry.example.com")
		if len(cs) != 1 {
			return fmt.Sprint(summary(cs))
		}
		return cs[0].Username
	}
	if got := user(); got != "one" {
		t.Fatalf("got %s", got)
	}
	if err := os.WriteFile(path, []byte(`{"auths":{"registry.example.com":{"username":"two","password":"longer"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := user(); got != "one" {
		t.Errorf("re-read before the recheck interval: got %s", got)
	}
	clk.Step(fileRecheck)
	if got := user(); got != "two" {
		t.Errorf("after the recheck interval: got %s, want two", got)
	}
	if err := os.WriteFile(path, []byte(`{"auths":`), 0o600); err != nil {
		t.Fatal(err)
	}
	clk.Step(fileRecheck)
	pc := s.ForPod(podWith("")).(*PodCredentials)
	if got := pc.For("registry.example.com"); len(got) != 1 || got[0].Username != "two" {
		t.Errorf("a broken file replaced the last good one: %v", summary(got))
	}
	if p := pc.Problems(); len(p) != 1 || !strings.Contains(p[0], "last good") {
		t.Errorf("Problems() = %v", p)
	}
}

func TestNewStoreErrors(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, "bad.json", `not json`)
	tests := []struct {
		name string
		opts Options
		want []string
	}{
		{name: "missing docker config file", opts: Options{DockerConfigFile: filepath.Join(dir, "nope.json")}, want: []string{"dockerConfigFile", "nope.json"}},
		{name: "invalid docker config file", opts: Options{DockerConfigFile: bad}, want: []string{"dockerConfigFile", bad, "not valid"}},
		{name: "provider config without bin dir", opts: Options{CredentialProviderConfig: bad}, want: []string{"credentialProviderBinDir"}},
		{name: "missing provider config", opts: Options{CredentialProviderConfig: filepath.Join(dir, "nope.yaml"), CredentialProviderBinDir: dir}, want: []string{"credentialProviderConfig", "nope.yaml"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newStoreWith(t, tc.opts)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// Nothing that prints a PodCredentials shows secret material.
func TestPrintingHidesSecrets(t *testing.T) {
	s, _ := startStore(t, Options{},
		pullSecret("default", "regcred", map[string]string{"registry.example.com": "alice:hunter2"}),
		serviceAccount("default", "default"))
	pc := s.ForPod(podWith("", "regcred"))
	var logged strings.Builder
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	logger.Info("credentials", "creds", pc)
	logged.WriteString(logger.GetSink().(ktesting.Underlier).GetBuffer().String())
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		logged.WriteString(fmt.Sprintf(format, pc))
		logged.WriteString(fmt.Sprintf(format, pc.(*PodCredentials).sources[0].ring))
	}
	if strings.Contains(logged.String(), "hunter2") {
		t.Errorf("printed the password:\n%s", logged.String())
	}
	if !strings.Contains(logged.String(), "pod imagePullSecret default/regcred") {
		t.Errorf("printed no source names:\n%s", logged.String())
	}
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func newFakeClock() *clocktesting.FakeClock { return clocktesting.NewFakeClock(time.Now()) }

// The Store asks for pull secrets only: one list per type and per namespace
// read. (The fake clientset ignores field selectors; test/integration shows
// the API server applies them.)
func TestSecretListsAreFiltered(t *testing.T) {
	for _, tc := range []struct {
		name       string
		namespaces []string
		want       []string
	}{{
		name: "cluster-wide",
		want: []string{
			"/type=kubernetes.io/dockercfg",
			"/type=kubernetes.io/dockerconfigjson",
		},
	}, {
		name:       "namespaces",
		namespaces: []string{"team-b", "team-a", "team-b"},
		want: []string{
			"team-a/type=kubernetes.io/dockercfg",
			"team-a/type=kubernetes.io/dockerconfigjson",
			"team-b/type=kubernetes.io/dockercfg",
			"team-b/type=kubernetes.io/dockerconfigjson",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			_, client := startStore(t, Options{SecretNamespaces: tc.namespaces})
			var got []string
			for _, a := range client.Actions() {
				if l, ok := a.(clienttesting.ListAction); ok && a.GetResource().Resource == "secrets" {
					got = append(got, a.GetNamespace()+"/"+l.GetListRestrictions().Fields.String())
				}
			}
			slices.Sort(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("secret lists (-want,+got):\n%s", diff)
			}
		})
	}
}

// With SecretNamespaces, a pod elsewhere is told its secrets are not read and
// still gets the global pull secret.
func TestSecretNamespaces(t *testing.T) {
	s, _ := startStore(t, Options{
		SecretNamespaces: []string{"team-a", "kube-system"},
		GlobalPullSecret: &types.NamespacedName{Namespace: "kube-system", Name: "global"},
	},
		pullSecret("default", "regcred", map[string]string{"registry.example.com": "default-user:1"}),
		pullSecret("team-a", "regcred", map[string]string{"registry.example.com": "team-user:2"}),
		pullSecret("kube-system", "global", map[string]string{"registry.example.com": "global-user:3"}),
		serviceAccount("default", "default"),
		serviceAccount("team-a", "default"),
	)
	for _, tc := range []struct {
		namespace    string
		wantCreds    []string
		wantProblems []string
	}{{
		namespace: "team-a",
		wantCreds: []string{
			"pod imagePullSecret team-a/regcred → team-user",
			"global pull secret kube-system/global → global-user",
		},
	}, {
		namespace:    "default",
		wantCreds:    []string{"global pull secret kube-system/global → global-user"},
		wantProblems: []string{"secret default/regcred not read: secrets are read only in namespaces kube-system, team-a (secretNamespaces)"},
	}} {
		t.Run(tc.namespace, func(t *testing.T) {
			pod := podWith("", "regcred")
			pod.Namespace = tc.namespace
			pc := s.ForPod(pod).(*PodCredentials)
			if diff := cmp.Diff(tc.wantCreds, summary(pc.For("registry.example.com"))); diff != "" {
				t.Errorf("credentials (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantProblems, pc.Problems()); diff != "" {
				t.Errorf("Problems() (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestPullSecretSelector(t *testing.T) {
	for typ, want := range map[v1.SecretType]string{
		v1.SecretTypeDockerConfigJson: "type=kubernetes.io/dockerconfigjson",
		v1.SecretTypeDockercfg:        "type=kubernetes.io/dockercfg",
	} {
		if got := pullSecretSelector(typ); got != want {
			t.Errorf("pullSecretSelector(%s) = %q, want %q", typ, got, want)
		}
	}
}
