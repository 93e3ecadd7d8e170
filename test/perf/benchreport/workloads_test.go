package benchreport

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLookupScale(t *testing.T) {
	tests := []struct {
		name         string
		scale        string
		wantWorkload string
		wantErr      bool
	}{
		{name: "smoke", scale: "smoke", wantWorkload: "50Nodes_100Pods"},
		{name: "small", scale: "small", wantWorkload: "500Nodes_2000Pods"},
		{name: "full", scale: "full", wantWorkload: "5000Nodes_10000Pods"},
		{name: "unknown", scale: "huge", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := LookupScale(tc.scale)
			if (err != nil) != tc.wantErr {
				t.Fatalf("LookupScale(%q) error = %v, want error: %v", tc.scale, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantWorkload, s.Workload); diff != "" {
				t.Errorf("workload (-want,+got):\n%s", diff)
			}
		})
	}
}
