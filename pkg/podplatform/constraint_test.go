package podplatform

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/archfilter/archfilter/pkg/platform"
)

func affinity(terms ...v1.NodeSelectorTerm) *v1.Affinity {
	return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms},
	}}
}

func term(exprs ...v1.NodeSelectorRequirement) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchExpressions: exprs}
}

func in(key string, values ...string) v1.NodeSelectorRequirement {
	return v1.NodeSelectorRequirement{Key: key, Operator: v1.NodeSelectorOpIn, Values: values}
}

func TestOwnConstraintRestrict(t *testing.T) {
	all, err := platform.ParseList("linux/amd64,linux/arm64,linux/s390x,windows/amd64")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		spec v1.PodSpec
		want string // platforms kept from all
	}{
		{name: "no constraint", want: "linux/amd64,linux/arm64,linux/s390x,windows/amd64"},
		{name: "spec.os", spec: v1.PodSpec{OS: &v1.PodOS{Name: v1.Windows}}, want: "windows/amd64"},
		{name: "nodeSelector arch", spec: v1.PodSpec{NodeSelector: map[string]string{v1.LabelArchStable: "arm64"}}, want: "linux/arm64"},
		{name: "beta nodeSelector keys", spec: v1.PodSpec{NodeSelector: map[string]string{"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux"}}, want: "linux/amd64"},
		{name: "affinity terms are ORed", spec: v1.PodSpec{Affinity: affinity(
			term(in(v1.LabelArchStable, "arm64")),
			term(in(v1.LabelArchStable, "s390x")),
		)}, want: "linux/arm64,linux/s390x"},
		{name: "a term without arch allows every arch", spec: v1.PodSpec{Affinity: affinity(
			term(in(v1.LabelArchStable, "arm64")),
			term(in("topology.kubernetes.io/zone", "a")),
		)}, want: "linux/amd64,linux/arm64,linux/s390x,windows/amd64"},
		{name: "expressions of a term are ANDed", spec: v1.PodSpec{Affinity: affinity(
			term(in(v1.LabelArchStable, "arm64", "amd64"), in(v1.LabelArchStable, "amd64", "s390x")),
		)}, want: "linux/amd64,windows/amd64"},
		{name: "NotIn is left to NodeAffinity", spec: v1.PodSpec{Affinity: affinity(
			term(v1.NodeSelectorRequirement{Key: v1.LabelArchStable, Operator: v1.NodeSelectorOpNotIn, Values: []string{"amd64"}}),
		)}, want: "linux/amd64,linux/arm64,linux/s390x,windows/amd64"},
		{name: "nodeSelector and affinity intersect", spec: v1.PodSpec{
			NodeSelector: map[string]string{v1.LabelArchStable: "arm64"},
			Affinity:     affinity(term(in(v1.LabelArchStable, "amd64"))),
		}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: tt.spec}
			got := OwnConstraintOf(pod).Restrict(all)
			if got.String() != mustString(t, tt.want) {
				t.Errorf("Restrict = %q, want %q", got, tt.want)
			}
		})
	}
	if !OwnConstraintOf(&v1.Pod{}).IsZero() {
		t.Error("a pod without constraints: IsZero() = false")
	}
	if got := OwnConstraintOf(&v1.Pod{Spec: v1.PodSpec{OS: &v1.PodOS{Name: v1.Linux}}}).Restrict(platform.Any()); !got.IsAny() {
		t.Errorf("Restrict(Any) = %v, want Any: the constraint is applied by the caller's node match", got)
	}
}

// mustString renders a platform list the way Set.String does, or "" for none.
func mustString(t *testing.T, list string) string {
	t.Helper()
	if list == "" {
		return platform.NewSet().String()
	}
	s, err := platform.ParseList(list)
	if err != nil {
		t.Fatal(err)
	}
	return s.String()
}
