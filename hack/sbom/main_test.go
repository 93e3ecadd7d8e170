package main

import (
	"strings"
	"testing"
)

func TestNormalise(t *testing.T) {
	in := `{"bomFormat":"CycloneDX","metadata":{
  "tools":[{"name":"cyclonedx-gomod","version":"v1.10.0","hashes":[{"alg":"SHA-256","content":"e6de"}]}],
  "component":{"bom-ref":"pkg:golang/example.com/m@v1.2.3?type=module","name":"example.com/m","version":"v1.2.3",
    "purl":"pkg:golang/example.com/m@v1.2.3?type=module"}},
  "dependencies":[{"ref":"pkg:golang/example.com/m@v1.2.3?type=module","dependsOn":["pkg:golang/x.org/y@v0.1.0?type=module"]}]}`
	for _, tc := range []struct {
		name           string
		unversioned    bool
		want, wantNone []string
	}{
		{
			name:     "binary SBOM keeps its version",
			want:     []string{`"version": "v1.2.3"`, `"ref": "pkg:golang/example.com/m@v1.2.3?type=module"`, `"version": "v1.10.0"`},
			wantNone: []string{"hashes", "e6de"},
		},
		{
			name:        "module graph SBOM loses the main module's version everywhere",
			unversioned: true,
			want: []string{`"ref": "pkg:golang/example.com/m?type=module"`, `"bom-ref": "pkg:golang/example.com/m?type=module"`,
				`"pkg:golang/x.org/y@v0.1.0?type=module"`, `"version": "v1.10.0"`},
			wantNone: []string{"hashes", "v1.2.3"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := normalise([]byte(in), tc.unversioned)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %s:\n%s", w, out)
				}
			}
			for _, w := range tc.wantNone {
				if strings.Contains(string(out), w) {
					t.Errorf("output still has %s:\n%s", w, out)
				}
			}
			again, err := normalise(out, tc.unversioned)
			if err != nil || string(again) != string(out) {
				t.Errorf("normalise is not idempotent (err %v)", err)
			}
		})
	}
	if _, err := normalise([]byte(`{"spdxVersion":"SPDX-2.3"}`), false); err == nil {
		t.Error("normalise accepted an SPDX document")
	}
}
