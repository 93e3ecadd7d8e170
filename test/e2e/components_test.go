package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"

	afconfig "github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/apis/config/argsfile"
	"github.com/archfilter/archfilter/test/manifests"
)

// saUser is the user a kube-system ServiceAccount's pods authenticate as.
func saUser(name string) user.Info {
	return &user.DefaultInfo{
		Name:   serviceaccount.MakeUsername(manifests.Namespace, name),
		Groups: append(serviceaccount.MakeGroupNames(manifests.Namespace), user.AllAuthenticated),
	}
}

// TestManifestsComponents renders, with kustomize, the overlays with the
// components under manifests/components that their comments tell users to
// add (test/e2e/testdata/components), and checks what each component changes
// and that it changes nothing else:
//   - misplaced-evict: the companion's last --misplaced is evict, and its
//     ServiceAccount may create pods/eviction (no other may);
//   - secret-namespaces (the scheduler's), placement- and heal-secret-namespaces
//     (the companions'): secretNamespaces [kube-system] in the scheduler's
//     configuration and the companion's --args (mounted from a ConfigMap),
//     which are otherwise the base's; pull secrets readable in kube-system
//     only, and service accounts still everywhere.
func TestManifestsComponents(t *testing.T) {
	wantArgs := func(t *testing.T, what string, got *afconfig.ArchFilterArgs, want *afconfig.ArchFilterArgs) {
		t.Helper()
		if diff := cmp.Diff([]string{"kube-system"}, got.SecretNamespaces); diff != "" {
			t.Errorf("%s: secretNamespaces (-want,+got):\n%s", what, diff)
		}
		rest := *got
		rest.SecretNamespaces = want.SecretNamespaces
		if diff := cmp.Diff(want, &rest); diff != "" {
			t.Errorf("%s: ArchFilterArgs besides secretNamespaces differ from the base's (-base,+component):\n%s", what, diff)
		}
	}
	baseCfg, err := manifests.LoadSchedulerConfig(repoFile(t, "manifests/base/config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	baseArgs := baseCfg.Profiles[0].PluginConfig[0].Args.(*afconfig.ArchFilterArgs)
	// The companions' overlays run with the plugin's defaults: the base's args.
	defaults, err := argsfile.Load("--args", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(baseArgs, defaults); diff != "" {
		t.Fatalf("the base's ArchFilterArgs are not the plugin's defaults, which the companions' overlays run with (-base,+defaults):\n%s", diff)
	}

	for _, tc := range []struct {
		dir       string
		scheduler bool
		companion string // its Deployment and ServiceAccount; "" for none
	}{
		{dir: "test/e2e/testdata/components/heal", scheduler: true, companion: manifests.HealName},
		{dir: "test/e2e/testdata/components/placement", companion: "archfilter-placement"},
		{dir: "test/e2e/testdata/components/secondary", scheduler: true},
	} {
		t.Run(filepath.Base(tc.dir), func(t *testing.T) {
			_, objs := render(t, tc.dir)
			for _, o := range objs {
				m, _ := meta.Accessor(o)
				if m.GetLabels()["app.kubernetes.io/part-of"] != "archfilter" {
					t.Errorf("%s: no label app.kubernetes.io/part-of=archfilter", manifests.ID(o))
				}
			}
			if err := manifests.CheckNoWildcards(objs); err != nil {
				t.Error(err)
			}
			a := manifests.Authorizer(objs)
			var users []user.Info
			if tc.scheduler {
				users = append(users, manifests.ServiceAccountUser())
			}
			if tc.companion != "" {
				users = append(users, saUser(tc.companion))
			}
			for _, u := range users {
				for _, r := range []struct {
					req  manifests.Request
					want bool
				}{
					{manifests.Request{Verb: "list", Resource: "secrets", Namespace: "kube-system"}, true},
					{manifests.Request{Verb: "watch", Resource: "secrets", Namespace: "kube-system"}, true},
					{manifests.Request{Verb: "list", Resource: "secrets"}, false},
					{manifests.Request{Verb: "list", Resource: "secrets", Namespace: "default"}, false},
					{manifests.Request{Verb: "list", Resource: "serviceaccounts"}, true},
					{manifests.HealEviction, u.GetName() != manifests.ServiceAccountUser().GetName()},
				} {
					if got := manifests.Allowed(a, u, r.req); got != r.want {
						t.Errorf("RBAC: %s may %s: %v, want %v", u.GetName(), r.req, got, r.want)
					}
				}
			}
			cms := map[string]*corev1.ConfigMap{}
			for _, cm := range manifests.Of[*corev1.ConfigMap](objs) {
				cms[cm.Name] = cm
			}
			for _, d := range manifests.Of[*appsv1.Deployment](objs) {
				c := d.Spec.Template.Spec.Containers[0]
				file, data := mountedFile(t, d, cms)
				switch d.Name {
				case manifests.Name:
					if file != manifests.ConfigDir+"/"+manifests.ConfigKey {
						t.Errorf("the scheduler's --config %s", file)
					}
					cfg, err := manifests.LoadSchedulerConfig(data)
					if err != nil {
						t.Fatal(err)
					}
					wantArgs(t, "the scheduler", cfg.Profiles[0].PluginConfig[0].Args.(*afconfig.ArchFilterArgs), baseArgs)
				case tc.companion:
					if got, _ := manifests.LastFlag(c.Args, "--misplaced"); got != "evict" {
						t.Errorf("%s: --misplaced=%q (the last given wins), want evict: %v", d.Name, got, c.Args)
					}
					path := filepath.Join(t.TempDir(), "args.yaml")
					if err := os.WriteFile(path, data, 0o600); err != nil {
						t.Fatal(err)
					}
					args, err := argsfile.Load("--args", path, nil)
					if err != nil {
						t.Fatalf("%s: the companion refuses its --args: %v", d.Name, err)
					}
					wantArgs(t, d.Name, args, defaults)
				default:
					t.Errorf("unexpected Deployment %s", d.Name)
				}
			}
		})
	}
}

// mountedFile is the file the Deployment's container reads its configuration
// from (--config or --args) and its content, from the ConfigMap mounted there.
func mountedFile(t *testing.T, d *appsv1.Deployment, cms map[string]*corev1.ConfigMap) (string, []byte) {
	t.Helper()
	c := d.Spec.Template.Spec.Containers[0]
	var file string
	for _, flag := range []string{"--config", "--args"} {
		if v, ok := manifests.LastFlag(c.Args, flag); ok {
			file = v
		}
	}
	if file == "" {
		t.Fatalf("%s: no --config or --args: %v", d.Name, c.Args)
	}
	for _, vm := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(file, vm.MountPath+"/")
		if !ok {
			continue
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name != vm.Name || v.ConfigMap == nil {
				continue
			}
			cm, ok := cms[v.ConfigMap.Name]
			if !ok {
				t.Fatalf("%s mounts ConfigMap %s, which the overlay does not have", d.Name, v.ConfigMap.Name)
			}
			if data, ok := cm.Data[rel]; ok {
				return file, []byte(data)
			}
		}
	}
	t.Fatalf("%s: %s is not in a ConfigMap mounted into its container", d.Name, file)
	return "", nil
}
