package placement

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/archfilter/archfilter/pkg/decision"
	"github.com/archfilter/archfilter/pkg/platform"
)

func mustSet(t *testing.T, list string) platform.Set {
	t.Helper()
	s, err := platform.ParseList(list)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func req(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirement {
	return v1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func in(key string, values ...string) v1.NodeSelectorRequirement {
	return req(key, v1.NodeSelectorOpIn, values...)
}

func term(exprs ...v1.NodeSelectorRequirement) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchExpressions: exprs}
}

func required(terms ...v1.NodeSelectorTerm) *v1.Affinity {
	return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms}}}
}

func podWith(aff *v1.Affinity, mutate ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{Spec: v1.PodSpec{Affinity: aff, Containers: []v1.Container{{Name: "c", Image: "img"}}}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

// from20348 are the known host builds that run a Windows Server 2022 image.
var from20348 = []string{"10.0.20348", "10.0.22000", "10.0.22621", "10.0.22631", "10.0.25398", "10.0.26100", "10.0.26200"}

var (
	linux   = in(v1.LabelOSStable, "linux")
	windows = in(v1.LabelOSStable, "windows")
	zoneA   = in("topology.kubernetes.io/zone", "a")
	zoneB   = in("topology.kubernetes.io/zone", "b")
)

func TestMerge(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		set     any // "" is Any; a platform.Set is used as is
		setOf   []platform.Platform
		opts    []Option
		prefs   []decision.Preference
		want    *v1.Affinity
		wantErr error
	}{
		{
			name: "no affinity, one platform",
			pod:  podWith(nil),
			set:  "linux/arm64",
			want: required(term(linux, in(v1.LabelArchStable, "arm64"))),
		},
		{
			name: "no affinity, two architectures",
			pod:  podWith(nil),
			set:  "linux/amd64,linux/arm64",
			want: required(term(linux, in(v1.LabelArchStable, "amd64", "arm64"))),
		},
		{
			name: "two operating systems become one term each",
			pod:  podWith(nil),
			set:  "linux/amd64,windows/amd64",
			want: required(term(linux, in(v1.LabelArchStable, "amd64")), term(windows, in(v1.LabelArchStable, "amd64"))),
		},
		{
			name: "every existing term gets the expressions (AND)",
			pod:  podWith(required(term(zoneA), term(zoneB))),
			set:  "linux/arm64",
			want: required(term(zoneA, linux, in(v1.LabelArchStable, "arm64")), term(zoneB, linux, in(v1.LabelArchStable, "arm64"))),
		},
		{
			name: "several operating systems: existing terms get the union",
			pod:  podWith(required(term(zoneA), term(zoneB))),
			set:  "linux/amd64,windows/arm64",
			want: required(
				term(zoneA, in(v1.LabelOSStable, "linux", "windows"), in(v1.LabelArchStable, "amd64", "arm64")),
				term(zoneB, in(v1.LabelOSStable, "linux", "windows"), in(v1.LabelArchStable, "amd64", "arm64"))),
		},
		{
			name: "matchFields terms are kept",
			pod:  podWith(required(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{in("metadata.name", "n1")}})),
			set:  "linux/arm64",
			want: required(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{in("metadata.name", "n1")}, MatchExpressions: []v1.NodeSelectorRequirement{linux, in(v1.LabelArchStable, "arm64")}}),
		},
		{
			name: "restricted to the pod's own arch constraint",
			pod:  podWith(required(term(in(v1.LabelArchStable, "arm64")))),
			set:  "linux/amd64,linux/arm64",
			want: required(term(in(v1.LabelArchStable, "arm64"), linux, in(v1.LabelArchStable, "arm64"))),
		},
		{
			name:    "conflict with the pod's own nodeSelector",
			pod:     podWith(nil, func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{v1.LabelArchStable: "amd64"} }),
			set:     "linux/arm64",
			wantErr: ErrConflict,
		},
		{
			name:    "conflict with spec.os",
			pod:     podWith(nil, func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.Windows} }),
			set:     "linux/arm64",
			wantErr: ErrConflict,
		},
		// Windows builds follow Microsoft's version-compatibility rules as containerd's
		// Windows matcher applies them (github.com/containerd/platforms,
		// platform_windows_compat.go): below 20348 the host's build must equal the image's;
		// from 20348 on a host runs every build from 20348 up to its own. Node affinity has
		// no "build >= x" operator, so the In list enumerates the compatible host builds.
		{
			name:  "windows: a Windows Server 2019 image needs its exact build",
			pod:   podWith(nil),
			setOf: []platform.Platform{{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.1234"}},
			want:  required(term(windows, in(v1.LabelArchStable, "amd64"), in(v1.LabelWindowsBuild, "10.0.17763"))),
		},
		{
			name:  "windows: a Windows Server 2022 image runs on 2022 and every later host",
			pod:   podWith(nil),
			setOf: []platform.Platform{{OS: "windows", Architecture: "amd64", OSVersion: "10.0.20348.2113"}},
			want:  required(term(windows, in(v1.LabelArchStable, "amd64"), in(v1.LabelWindowsBuild, from20348...))),
		},
		{
			name: "windows: an index with 2019 and 2022 images: the union of their hosts",
			pod:  podWith(nil),
			setOf: []platform.Platform{
				{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.1234"},
				{OS: "windows", Architecture: "amd64", OSVersion: "10.0.20348.1"},
			},
			want: required(term(windows, in(v1.LabelArchStable, "amd64"), in(v1.LabelWindowsBuild, append([]string{"10.0.17763"}, from20348...)...))),
		},
		{
			name: "windows: 2022 and 2025 images in one pod need a host that runs both (2025 or later)",
			pod:  podWith(nil),
			set: platform.NewSet(platform.Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.20348.1"}).
				Intersect(platform.NewSet(platform.Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.26100.1"})),
			want: required(term(windows, in(v1.LabelArchStable, "amd64"), in(v1.LabelWindowsBuild, "10.0.26100", "10.0.26200"))),
		},
		{
			name:  "windows: a cluster node's build newer than the known list is added; an older one is not",
			pod:   podWith(nil),
			setOf: []platform.Platform{{OS: "windows", Architecture: "amd64", OSVersion: "10.0.26100.1"}},
			opts:  []Option{WithWindowsHostBuilds("10.0.28000", "10.0.20348", "10.0.26100")},
			want:  required(term(windows, in(v1.LabelArchStable, "amd64"), in(v1.LabelWindowsBuild, "10.0.26100", "10.0.26200", "10.0.28000"))),
		},
		{
			name:  "windows: the existing terms get the build expression ANDed in",
			pod:   podWith(required(term(zoneA))),
			setOf: []platform.Platform{{OS: "windows", Architecture: "amd64", OSVersion: "10.0.20348.1"}},
			want:  required(term(zoneA, windows, in(v1.LabelArchStable, "amd64"), in(v1.LabelWindowsBuild, from20348...))),
		},
		{
			name: "windows and linux: the Windows term alone carries builds",
			pod:  podWith(nil),
			setOf: []platform.Platform{
				{OS: "linux", Architecture: "amd64"},
				{OS: "windows", Architecture: "amd64", OSVersion: "10.0.26100.1"},
			},
			want: required(term(linux, in(v1.LabelArchStable, "amd64")), term(windows, in(v1.LabelArchStable, "amd64"), in(v1.LabelWindowsBuild, "10.0.26100", "10.0.26200"))),
		},
		{
			name: "any platform adds nothing",
			pod:  podWith(nil),
			want: nil,
		},
		{
			name: "any platform keeps the pod's affinity",
			pod:  podWith(required(term(zoneA))),
			want: required(term(zoneA)),
		},
		{
			name:  "preferences for allowed platforms only",
			pod:   podWith(nil),
			set:   "linux/amd64,linux/arm64",
			prefs: []decision.Preference{{Platform: platform.Platform{OS: "linux", Architecture: "arm64"}, Weight: 50}, {Platform: platform.Platform{OS: "linux", Architecture: "s390x"}, Weight: 10}},
			want: &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution:  &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{term(linux, in(v1.LabelArchStable, "amd64", "arm64"))}},
				PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 50, Preference: term(linux, in(v1.LabelArchStable, "arm64"))}},
			}},
		},
		{
			name:  "preference already present is not repeated",
			pod:   podWith(&v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 50, Preference: term(linux, in(v1.LabelArchStable, "arm64"))}}}}),
			prefs: []decision.Preference{{Platform: platform.Platform{OS: "linux", Architecture: "arm64"}, Weight: 50}},
			want:  &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 50, Preference: term(linux, in(v1.LabelArchStable, "arm64"))}}}},
		},
		{
			name: "pod affinity is kept",
			pod:  podWith(&v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{}}),
			set:  "linux/arm64",
			want: &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{}, NodeAffinity: required(term(linux, in(v1.LabelArchStable, "arm64"))).NodeAffinity},
		},
		{name: "malformed: empty term list", pod: podWith(required()), set: "linux/arm64", wantErr: ErrUnmergeable},
		{name: "malformed: empty term", pod: podWith(required(term(zoneA), v1.NodeSelectorTerm{})), set: "linux/arm64", wantErr: ErrUnmergeable},
		{name: "malformed: In without values", pod: podWith(required(term(in("k")))), set: "linux/arm64", wantErr: ErrUnmergeable},
		{name: "malformed: Exists with values", pod: podWith(required(term(req("k", v1.NodeSelectorOpExists, "x")))), set: "linux/arm64", wantErr: ErrUnmergeable},
		{name: "malformed: Gt not an integer", pod: podWith(required(term(req("k", v1.NodeSelectorOpGt, "x")))), set: "linux/arm64", wantErr: ErrUnmergeable},
		{name: "malformed: unknown operator", pod: podWith(required(term(req("k", "Near", "x")))), set: "linux/arm64", wantErr: ErrUnmergeable},
		{name: "malformed: empty key", pod: podWith(required(term(in(" ", "x")))), set: "linux/arm64", wantErr: ErrUnmergeable},
		{
			name:    "malformed: preferred term",
			pod:     podWith(&v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 1, Preference: term(in("k"))}}}}),
			set:     "linux/arm64",
			wantErr: ErrUnmergeable,
		},
		{
			name:  "windows image without os.version: no build term",
			pod:   podWith(nil),
			setOf: []platform.Platform{{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.1"}, {OS: "windows", Architecture: "amd64"}},
			want:  required(term(windows, in(v1.LabelArchStable, "amd64"))),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := platform.Any()
			switch s := tc.set.(type) {
			case string:
				if s != "" {
					set = mustSet(t, s)
				}
			case platform.Set:
				set = s
			}
			if tc.setOf != nil {
				set = platform.NewSet(tc.setOf...)
			}
			before := tc.pod.DeepCopy()
			got, err := Merge(tc.pod, set, tc.prefs, tc.opts...)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Merge error = %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Merge (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.pod); diff != "" {
				t.Errorf("Merge modified the pod (-before,+after):\n%s", diff)
			}
		})
	}
}

func TestWithoutGate(t *testing.T) {
	other := v1.PodSchedulingGate{Name: "example.com/other"}
	ours := v1.PodSchedulingGate{Name: GateName}
	for _, tc := range []struct {
		name  string
		gates []v1.PodSchedulingGate
		want  []v1.PodSchedulingGate
		has   bool
	}{
		{name: "none"},
		{name: "only ours", gates: []v1.PodSchedulingGate{ours}, has: true},
		{name: "ours and another", gates: []v1.PodSchedulingGate{other, ours}, want: []v1.PodSchedulingGate{other}, has: true},
		{name: "another only", gates: []v1.PodSchedulingGate{other}, want: []v1.PodSchedulingGate{other}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{SchedulingGates: tc.gates}}
			if got := HasGate(pod); got != tc.has {
				t.Errorf("HasGate = %v, want %v", got, tc.has)
			}
			if diff := cmp.Diff(tc.want, WithoutGate(tc.gates)); diff != "" {
				t.Errorf("WithoutGate (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestUnsatisfiable(t *testing.T) {
	none := []v1.NodeSelectorRequirement{req(v1.LabelArchStable, v1.NodeSelectorOpExists), req(v1.LabelArchStable, v1.NodeSelectorOpDoesNotExist)}
	zone := zoneA
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		want    *v1.Affinity
		wantErr error
	}{
		{name: "no affinity: one term", pod: podWith(nil), want: required(term(none...))},
		{name: "every existing term gains the pair (a gated pod's terms take expressions, not siblings)",
			pod:  podWith(required(term(zone), term(in(v1.LabelArchStable, "arm64")))),
			want: required(term(append([]v1.NodeSelectorRequirement{zone}, none...)...), term(append([]v1.NodeSelectorRequirement{in(v1.LabelArchStable, "arm64")}, none...)...))},
		{name: "an empty term cannot be merged", pod: podWith(required(term())), wantErr: ErrUnmergeable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.pod.DeepCopy()
			got, err := Unsatisfiable(tc.pod)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Unsatisfiable (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.pod); diff != "" {
				t.Errorf("the pod was modified (-before,+after):\n%s", diff)
			}
			if got == nil {
				return
			}
			// No node matches, whatever its labels.
			for _, labels := range []map[string]string{nil, {v1.LabelArchStable: "amd64", "topology.kubernetes.io/zone": "a"}, {v1.LabelArchStable: "arm64"}} {
				node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}}
				pod := tc.pod.DeepCopy()
				pod.Spec.Affinity = got
				if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); ok {
					t.Errorf("node with labels %v matches", labels)
				}
			}
		})
	}
}
