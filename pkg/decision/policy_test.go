package decision

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/archfilter/archfilter/apis/annotations"
	"github.com/archfilter/archfilter/apis/config"
	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
)

// policyArgs enables policies with every field overridable, as the defaults do.
func policyArgs(args config.ArchFilterArgs) *config.ArchFilterArgs {
	args.Policies = config.PolicyArgs{Enabled: true, AllowedOverrides: config.PolicyFields}
	return &args
}

type policyOpt func(*policyv1alpha1.ArchFilterPolicy)

func policyObj(name string, opts ...policyOpt) *policyv1alpha1.ArchFilterPolicy {
	p := &policyv1alpha1.ArchFilterPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Generation: 1}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func selecting(key, value string) policyOpt {
	return func(p *policyv1alpha1.ArchFilterPolicy) {
		p.Spec.PodSelector = policyv1alpha1.MatchingLabels(map[string]string{key: value})
	}
}

func allowing(platforms ...string) policyOpt {
	return func(p *policyv1alpha1.ArchFilterPolicy) { p.Spec.AllowedPlatforms = platforms }
}

func preferring(platform string, weight int32) policyOpt {
	return func(p *policyv1alpha1.ArchFilterPolicy) {
		p.Spec.PreferredPlatforms = append(p.Spec.PreferredPlatforms, policyv1alpha1.PlatformPreference{Platform: platform, Weight: weight})
	}
}

func failing(fp policyv1alpha1.FailurePolicy) policyOpt {
	return func(p *policyv1alpha1.ArchFilterPolicy) { p.Spec.FailurePolicy = &fp }
}

func optingOut(p *policyv1alpha1.ArchFilterPolicy) { p.Spec.OptOut = true }

func labelled(key, value string) podOpt {
	return func(p *v1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[key] = value
	}
}

// policies parses objs into a lookup, in precedence order.
func policies(t *testing.T, objs ...*policyv1alpha1.ArchFilterPolicy) PolicyLookup {
	t.Helper()
	byNS := map[string][]*Policy{}
	for _, o := range objs {
		p, err := ParsePolicy(o)
		if err != nil {
			t.Fatal(err)
		}
		byNS[o.Namespace] = append(byNS[o.Namespace], p)
	}
	for _, ps := range byNS {
		SortPolicies(ps)
	}
	return func(ns string) []*Policy { return byNS[ns] }
}

func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		obj     *policyv1alpha1.ArchFilterPolicy
		wantErr string // a field path the error names; "" for none
		check   func(t *testing.T, p *Policy)
	}{
		{name: "empty selects every pod and sets nothing", obj: policyObj("a"), check: func(t *testing.T, p *Policy) {
			if !p.SelectsAll() || len(p.Fields()) != 0 {
				t.Errorf("SelectsAll %v, fields %v", p.SelectsAll(), p.Fields())
			}
		}},
		{name: "an empty selector selects every pod", obj: policyObj("a", func(p *policyv1alpha1.ArchFilterPolicy) { p.Spec.PodSelector = &policyv1alpha1.LabelSelector{} }), check: func(t *testing.T, p *Policy) {
			if !p.SelectsAll() {
				t.Error("an empty selector should select every pod")
			}
		}},
		{name: "every field", obj: policyObj("a", allowing("linux/arm64", "linux/amd64"), preferring("linux/arm64", 80), failing(policyv1alpha1.FailurePolicyFail), optingOut), check: func(t *testing.T, p *Policy) {
			if got := len(p.Fields()); got != 4 {
				t.Errorf("fields %v, want all four", p.Fields())
			}
			if p.Allowed.String() != "linux/amd64,linux/arm64" || p.Preferences[0].Weight != 80 || p.FailurePolicy != config.FailurePolicyFail {
				t.Errorf("parsed %+v", p)
			}
		}},
		{name: "an explicit empty preference list prefers nothing", obj: policyObj("a", func(p *policyv1alpha1.ArchFilterPolicy) {
			p.Spec.PreferredPlatforms = []policyv1alpha1.PlatformPreference{}
		}), check: func(t *testing.T, p *Policy) {
			if p.Preferences == nil || len(p.Preferences) != 0 {
				t.Errorf("preferences %#v, want set and empty", p.Preferences)
			}
		}},
		{name: "bad platform", obj: policyObj("a", allowing("linux")), wantErr: "spec.allowedPlatforms[0]"},
		{name: "bad preference platform", obj: policyObj("a", preferring("arm64", 10)), wantErr: "spec.preferredPlatforms[0].platform"},
		{name: "weight out of range", obj: policyObj("a", preferring("linux/arm64", 101)), wantErr: "spec.preferredPlatforms[0].weight"},
		{name: "bad selector operator", obj: policyObj("a", func(p *policyv1alpha1.ArchFilterPolicy) {
			p.Spec.PodSelector = &policyv1alpha1.LabelSelector{MatchExpressions: []policyv1alpha1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
		}), wantErr: "spec.podSelector"},
		{name: "bad failure policy", obj: policyObj("a", failing("Maybe")), wantErr: "spec.failurePolicy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePolicy(tc.obj)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "shop/a") {
					t.Fatalf("err = %v, want one naming %s and the policy", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, p)
		})
	}
}

// TestGoverning: of the policies that select a pod, one with a podSelector
// comes before one without, then the name decides; the others are returned.
func TestGoverning(t *testing.T) {
	s := mustSettings(t, policyArgs(config.ArchFilterArgs{}))
	lookup := policies(t,
		policyObj("b-all"),
		policyObj("a-all"),
		policyObj("z-web", selecting("app", "web")),
		policyObj("m-web", selecting("app", "web")),
		policyObj("db", selecting("app", "db")),
	)
	for _, tc := range []struct {
		pod    *v1.Pod
		want   string
		others []string
	}{
		{pod: pod(labelled("app", "web")), want: "m-web", others: []string{"z-web", "a-all", "b-all"}},
		{pod: pod(labelled("app", "db")), want: "db", others: []string{"a-all", "b-all"}},
		{pod: pod(), want: "a-all", others: []string{"b-all"}},
		{pod: pod(func(p *v1.Pod) { p.Namespace = "other" })},
	} {
		gov, others := s.Governing(tc.pod, lookup)
		var got string
		if gov != nil {
			got = gov.Name
		}
		var names []string
		for _, o := range others {
			names = append(names, o.Name)
		}
		if got != tc.want || strings.Join(names, ",") != strings.Join(tc.others, ",") {
			t.Errorf("pod %v: governing %q, others %v; want %q, %v", tc.pod.Labels, got, names, tc.want, tc.others)
		}
	}
	off := mustSettings(t, &config.ArchFilterArgs{})
	if gov, _ := off.Governing(pod(), lookup); gov != nil {
		t.Errorf("policies turned off, yet %s governs", gov.Key())
	}
}

// TestPolicyPrecedence: the pod's annotations, then its policy, then the
// cluster's ArchFilterArgs; the admin's limits clear what a policy may not set.
func TestPolicyPrecedence(t *testing.T) {
	known := map[string]any{"multi": "linux/amd64,linux/arm64", "amd": "linux/amd64", "arm": "linux/arm64", "gone": errors.New("gone: NotFound")}
	clusterArgs := config.ArchFilterArgs{PreferredPlatforms: []config.PlatformPreference{{Platform: "linux/amd64", Weight: 5}}}
	for _, tc := range []struct {
		name      string
		overrides []config.PolicyField // nil: all
		policy    *policyv1alpha1.ArchFilterPolicy
		pod       *v1.Pod
		platforms string // "" when rejected
		rejection string
		skip      SkipReason
		preferred string // "platform=weight (source)"
	}{
		{name: "allowed platforms narrow the images'", policy: policyObj("p", allowing("linux/arm64")), pod: pod(images("multi")),
			platforms: "linux/arm64", preferred: "linux/amd64=5 (preferredPlatforms)"},
		{name: "images on none allowed: rejected, naming the policy", policy: policyObj("p", allowing("linux/arm64")), pod: pod(images("amd")),
			rejection: RejectNotAllowedByPolicy},
		{name: "declared platforms are narrowed too", policy: policyObj("p", allowing("linux/amd64")), pod: pod(images("x"), annotated(annotations.Platforms, "linux/amd64,linux/arm64")),
			platforms: "linux/amd64"},
		{name: "preferences replace the cluster's", policy: policyObj("p", preferring("linux/arm64", 90)), pod: pod(images("multi")),
			platforms: "linux/amd64,linux/arm64", preferred: "linux/arm64=90 (ArchFilterPolicy shop/p)"},
		{name: "the pod's annotation wins over the policy's preferences", policy: policyObj("p", preferring("linux/arm64", 90)),
			pod: pod(images("multi"), annotated(annotations.PreferredPlatforms, "linux/amd64=7")), platforms: "linux/amd64,linux/arm64", preferred: "linux/amd64=7 (annotation archfilter.io/preferred-platforms)"},
		{name: "failurePolicy Fail keeps a failed pod Pending", policy: policyObj("p", failing(policyv1alpha1.FailurePolicyFail)), pod: pod(images("gone")),
			rejection: RejectResolutionFailed},
		{name: "an admin who withholds failurePolicy keeps the cluster's", overrides: []config.PolicyField{config.PolicyFieldAllowedPlatforms},
			policy: policyObj("p", failing(policyv1alpha1.FailurePolicyFail)), pod: pod(images("gone")), platforms: "*"},
		{name: "optOut leaves the pod alone", policy: policyObj("p", optingOut), pod: pod(images("amd")), skip: SkipPolicyOptOut},
		{name: "a pod saying skip false is constrained despite optOut", policy: policyObj("p", optingOut, allowing("linux/amd64")),
			pod: pod(images("multi"), annotated(annotations.Skip, "false")), platforms: "linux/amd64"},
		{name: "the pod's skip annotation wins", policy: policyObj("p", allowing("linux/arm64")), pod: pod(images("amd"), annotated(annotations.Skip, "true")), skip: SkipAnnotation},
		{name: "a policy not selecting the pod changes nothing", policy: policyObj("p", selecting("app", "db"), allowing("linux/arm64")), pod: pod(images("amd")),
			platforms: "linux/amd64", preferred: "linux/amd64=5 (preferredPlatforms)"},
		{name: "an excluded namespace stays excluded", policy: policyObj("p", allowing("linux/arm64"), func(p *policyv1alpha1.ArchFilterPolicy) { p.Namespace = "kube-system" }),
			pod: pod(images("amd"), func(p *v1.Pod) { p.Namespace = "kube-system" }), skip: SkipExcludedNamespace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := clusterArgs
			args.ExcludedNamespaces = []string{"kube-system"}
			a := policyArgs(args)
			if tc.overrides != nil {
				a.Policies.AllowedOverrides = tc.overrides
			}
			s := mustSettings(t, a)
			rules := s.ForPod(tc.pod, policies(t, tc.policy))
			if skip := rules.Scope(tc.pod, ViaPlacement, nil); skip != tc.skip {
				t.Fatalf("Scope = %q, want %q", skip, tc.skip)
			}
			if tc.skip != "" {
				return
			}
			d := rules.Decide(tc.pod, lookup(t, known))
			switch {
			case tc.rejection != "":
				if d.Rejection == nil || d.Rejection.Kind != tc.rejection {
					t.Fatalf("rejection %+v, want %s", d.Rejection, tc.rejection)
				}
				if tc.rejection == RejectNotAllowedByPolicy && !strings.Contains(d.Rejection.Message, "ArchFilterPolicy shop/p") {
					t.Errorf("message %q does not name the policy", d.Rejection.Message)
				}
			case d.Rejection != nil:
				t.Fatalf("rejected: %+v", d.Rejection)
			default:
				got := d.Platforms.String()
				if d.Platforms.IsAny() {
					got = "*"
				}
				if got != tc.platforms {
					t.Errorf("platforms %s, want %s", got, tc.platforms)
				}
			}
			if tc.preferred != "" {
				prefs, from, _ := rules.Preferred(tc.pod)
				if got := PreferencesString(prefs) + " (" + string(from) + ")"; got != tc.preferred {
					t.Errorf("preferred %q, want %q", got, tc.preferred)
				}
			}
			if rules.Policy != nil && d.Policy != rules.Policy.Key() {
				t.Errorf("decision names policy %q, want %q", d.Policy, rules.Policy.Key())
			}
		})
	}
}

// TestWithinLimits: fields the admin withholds are cleared and listed, and
// the policy given is not changed.
func TestWithinLimits(t *testing.T) {
	a := policyArgs(config.ArchFilterArgs{})
	a.Policies.AllowedOverrides = []config.PolicyField{config.PolicyFieldPreferredPlatforms}
	s := mustSettings(t, a)
	p, err := ParsePolicy(policyObj("p", allowing("linux/arm64"), preferring("linux/arm64", 3), failing(policyv1alpha1.FailurePolicyFail), optingOut))
	if err != nil {
		t.Fatal(err)
	}
	limited := s.WithinLimits(p)
	if got := limited.Fields(); len(got) != 1 || got[0] != config.PolicyFieldPreferredPlatforms {
		t.Errorf("fields within limits %v, want preferredPlatforms only", got)
	}
	want := []config.PolicyField{config.PolicyFieldAllowedPlatforms, config.PolicyFieldFailurePolicy, config.PolicyFieldOptOut}
	if strings.Join(fieldStrings(limited.Ignored), ",") != strings.Join(fieldStrings(want), ",") {
		t.Errorf("ignored %v, want %v", limited.Ignored, want)
	}
	if len(p.Fields()) != 4 {
		t.Errorf("WithinLimits changed its argument: %v", p.Fields())
	}
}

func fieldStrings(fs []config.PolicyField) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = string(f)
	}
	return out
}

// TestForPodDoesNotAllocateWithoutPolicy: the scheduling cycle pays nothing
// for policies in namespaces that have none.
func TestForPodDoesNotAllocateWithoutPolicy(t *testing.T) {
	s := mustSettings(t, policyArgs(config.ArchFilterArgs{}))
	lookup := policies(t, policyObj("p", func(p *policyv1alpha1.ArchFilterPolicy) { p.Namespace = "elsewhere" }))
	p := pod(images("multi"))
	if allocs := testing.AllocsPerRun(100, func() {
		if s.ForPod(p, lookup) != s {
			t.Fatal("a pod without a policy should get the cluster's settings")
		}
	}); allocs != 0 {
		t.Errorf("ForPod allocates %v times without a policy", allocs)
	}
}

// TestForImagesOf: a DaemonSet pod left alone (daemonSetPolicy Skip) is
// judged by the cluster's settings, not its policy; any other pod keeps them.
func TestForImagesOf(t *testing.T) {
	s := mustSettings(t, policyArgs(config.ArchFilterArgs{}))
	lookup := policies(t, policyObj("p", allowing("linux/arm64")))
	rules := s.ForPod(pod(daemonSet), lookup)
	if rules == s || rules.ForImagesOf(SkipDaemonSet) != s {
		t.Errorf("a DaemonSet pod under Skip: want the cluster's settings")
	}
	if rules.ForImagesOf("") != rules || rules.ForImagesOf(SkipAnnotation) != rules || s.ForImagesOf(SkipDaemonSet) != s {
		t.Errorf("other pods keep the settings they were given")
	}
}
