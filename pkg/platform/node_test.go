package platform

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
)

// withNodeInfo sets what the kubelet reports in status.nodeInfo, which st.MakeNode has no
// setter for.
func withNodeInfo(w *st.NodeWrapper, os, arch string) *v1.Node {
	node := w.Obj()
	node.Status.NodeInfo.OperatingSystem = os
	node.Status.NodeInfo.Architecture = arch
	return node
}

func TestFromNode(t *testing.T) {
	tests := []struct {
		name   string
		node   *v1.Node
		want   NodePlatform
		wantOK bool
	}{
		{
			name:   "GA labels",
			node:   st.MakeNode().Name("n").Label(v1.LabelOSStable, "linux").Label(v1.LabelArchStable, "arm64").Obj(),
			want:   NodePlatform{OS: "linux", Architecture: "arm64"},
			wantOK: true,
		},
		{
			name: "GA labels win over beta labels and status",
			node: withNodeInfo(st.MakeNode().Name("n").
				Label(v1.LabelOSStable, "linux").Label(v1.LabelArchStable, "arm64").
				Label(labelBetaOS, "windows").Label(labelBetaArch, "amd64"), "windows", "amd64"),
			want:   NodePlatform{OS: "linux", Architecture: "arm64"},
			wantOK: true,
		},
		{
			name:   "beta labels only",
			node:   st.MakeNode().Name("n").Label(labelBetaOS, "linux").Label(labelBetaArch, "s390x").Obj(),
			want:   NodePlatform{OS: "linux", Architecture: "s390x"},
			wantOK: true,
		},
		{
			name:   "beta labels win over status",
			node:   withNodeInfo(st.MakeNode().Name("n").Label(labelBetaOS, "linux").Label(labelBetaArch, "ppc64le"), "linux", "amd64"),
			want:   NodePlatform{OS: "linux", Architecture: "ppc64le"},
			wantOK: true,
		},
		{
			name:   "status.nodeInfo only",
			node:   withNodeInfo(st.MakeNode().Name("n"), "linux", "riscv64"),
			want:   NodePlatform{OS: "linux", Architecture: "riscv64"},
			wantOK: true,
		},
		{
			name:   "fallback is per field",
			node:   withNodeInfo(st.MakeNode().Name("n").Label(v1.LabelOSStable, "linux").Label(labelBetaArch, "arm"), "", "amd64"),
			want:   NodePlatform{OS: "linux", Architecture: "arm"},
			wantOK: true,
		},
		{
			name:   "empty label falls back",
			node:   withNodeInfo(st.MakeNode().Name("n").Label(v1.LabelOSStable, "").Label(v1.LabelArchStable, ""), "linux", "amd64"),
			want:   NodePlatform{OS: "linux", Architecture: "amd64"},
			wantOK: true,
		},
		{
			name: "windows build label",
			node: st.MakeNode().Name("n").Label(v1.LabelOSStable, "windows").Label(v1.LabelArchStable, "amd64").
				Label(v1.LabelWindowsBuild, "10.0.17763").Obj(),
			want:   NodePlatform{OS: "windows", Architecture: "amd64", WindowsBuild: "10.0.17763"},
			wantOK: true,
		},
		{
			name:   "values are verbatim",
			node:   st.MakeNode().Name("n").Label(v1.LabelOSStable, "Linux").Label(v1.LabelArchStable, "x86_64").Obj(),
			want:   NodePlatform{OS: "Linux", Architecture: "x86_64"},
			wantOK: true,
		},
		{
			name:   "nothing",
			node:   st.MakeNode().Name("n").Label("unrelated", "x").Obj(),
			wantOK: false,
		},
		{
			name:   "os without arch",
			node:   st.MakeNode().Name("n").Label(v1.LabelOSStable, "linux").Obj(),
			want:   NodePlatform{OS: "linux"},
			wantOK: false,
		},
		{
			name:   "arch without os",
			node:   withNodeInfo(st.MakeNode().Name("n"), "", "amd64"),
			want:   NodePlatform{Architecture: "amd64"},
			wantOK: false,
		},
		{
			name:   "nil node",
			wantOK: false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := FromNode(tc.node)
			if ok != tc.wantOK {
				t.Errorf("FromNode() ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("FromNode() (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestFromNodeAllocs(t *testing.T) {
	tests := []struct {
		name string
		node *v1.Node
	}{
		{
			name: "GA labels",
			node: st.MakeNode().Name("n").Label(v1.LabelOSStable, "windows").Label(v1.LabelArchStable, "amd64").
				Label(v1.LabelWindowsBuild, "10.0.17763").Obj(),
		},
		{
			name: "status.nodeInfo only",
			node: withNodeInfo(st.MakeNode().Name("n"), "linux", "amd64"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(100, func() {
				if _, ok := FromNode(tc.node); !ok {
					t.Fatal("FromNode() ok = false, want true")
				}
			})
			if allocs != 0 {
				t.Errorf("FromNode() allocated %v times per call, want 0", allocs)
			}
		})
	}
}

func BenchmarkFromNode(b *testing.B) {
	// A realistic label count, so the map lookups are not flattered by a tiny map.
	node := withNodeInfo(st.MakeNode().Name("node-1").
		Label(v1.LabelHostname, "node-1").
		Label(v1.LabelOSStable, "linux").
		Label(v1.LabelArchStable, "arm64").
		Label(labelBetaOS, "linux").
		Label(labelBetaArch, "arm64").
		Label(v1.LabelTopologyZone, "zone-a").
		Label(v1.LabelTopologyRegion, "region-1").
		Label(v1.LabelInstanceTypeStable, "m7g.large"), "linux", "arm64")
	b.ReportAllocs()
	for b.Loop() {
		FromNode(node)
	}
}
