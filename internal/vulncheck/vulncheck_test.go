package vulncheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func parseFile(t *testing.T, path string) *Result {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := Parse(f)
	if err != nil {
		t.Fatalf("Parse(%s): %v", path, err)
	}
	return r
}

func TestParse(t *testing.T) {
	got := parseFile(t, "testdata/scan.json")
	want := &Result{
		Scanner: "govulncheck@v1.9.0", DB: "file:///db", GoVersion: "go1.26.8", ScanLevel: "symbol",
		DBModified: time.Date(2026, 11, 5, 23, 49, 57, 0, time.UTC),
		Reachable: []Finding{
			{
				// The shorter of its two call paths.
				ID: "GO-2026-0001", Summary: "Called vulnerability in example.com/a", Module: "example.com/a",
				FoundIn: "v1.1.0", FixedIn: "v1.2.0", Symbol: "example.com/a/p.Other",
				Entry: "github.com/archfilter/archfilter/cmd/scheduler.main", Depth: 2,
			},
			{
				ID: "GO-2026-0004", Summary: "Called vulnerability in the standard library", Module: "stdlib",
				FoundIn: "v1.26.8", FixedIn: "v1.26.9", Symbol: "net/http.Get",
				Entry: "github.com/archfilter/archfilter/cmd/scheduler.main", Depth: 2,
			},
		},
		Imported: 1, Required: 1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want,+got):\n%s", diff)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ name, input, want string }{
		{"not JSON", "Scanning your code...\n", "reading govulncheck's JSON output"},
		{"no config", `{"osv":{"id":"GO-2026-0001"}}`, "no govulncheck config message"},
		{"module level", `{"config":{"scan_level":"module"}}`, `scanned at "module" level, want symbol`},
		{"finding without trace", `{"config":{"scan_level":"symbol"}}{"finding":{"osv":"GO-2026-0001"}}`, "has no trace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.input))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse() error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func writeAllowList(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "allowlist.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadAllowListRefuses(t *testing.T) {
	for _, tc := range []struct{ name, content, want string }{
		{"no reason", "- id: GO-2026-0001\n  expires: \"2026-12-31\"\n", "entry 1 (GO-2026-0001): no reason"},
		{"bad date", "- id: GO-2026-0001\n  reason: r\n  expires: 31.12.2026\n", `expires "31.12.2026" is not a date`},
		{"no date", "- id: GO-2026-0001\n  reason: r\n", `expires "" is not a date`},
		{"bad id", "- id: CVE-2026-1\n  reason: r\n  expires: \"2026-12-31\"\n", `id "CVE-2026-1" is not a Go vulnerability ID`},
		{"twice", "- {id: GO-2026-0001, reason: r, expires: \"2026-12-31\"}\n- {id: GO-2026-0001, reason: s, expires: \"2026-12-31\"}\n", "entry 2 (GO-2026-0001): GO-2026-0001 is listed twice"},
		{"unknown field", "- {id: GO-2026-0001, reason: r, expires: \"2026-12-31\", until: x}\n", `unknown field "until"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeAllowList(t, tc.content)
			_, err := LoadAllowList(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("LoadAllowList() error = %v, want one naming %s and containing %q", err, p, tc.want)
			}
		})
	}
}

// The repository's own allow-list loads.
func TestRepositoryAllowList(t *testing.T) {
	entries, err := LoadAllowList("../../hack/vuln/allowlist.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		for _, f := range e.Flavours {
			if f != "main" && f != "k8s1.35" {
				t.Errorf("entry %s: flavour %q is neither main nor k8s1.35", e.ID, f)
			}
		}
	}
}

// moduleWideAdvisories are the allow-list's entries for advisories against the
// whole k8s.io/kubernetes module, with the packages that hold the vulnerable
// code: the entries stay true only while no shipped binary links them.
var moduleWideAdvisories = map[string]string{
	"GO-2025-3521": "k8s.io/kubernetes/pkg/volume/",   // kubelet's gitRepo volume
	"GO-2025-3547": "k8s.io/kubernetes/pkg/registry/", // kube-apiserver's registries
}

// TestModuleWideAdvisoriesAreNotLinked checks the reason the allow-list gives
// for its module-wide k8s.io/kubernetes entries against what each flavour's
// shipped commands import, as `go list -deps` resolves them.
func TestModuleWideAdvisoriesAreNotLinked(t *testing.T) {
	entries, err := LoadAllowList("../../hack/vuln/allowlist.yaml")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, e := range entries {
		listed[e.ID] = true
	}
	for id := range moduleWideAdvisories {
		if !listed[id] {
			t.Logf("%s is no longer allow-listed: drop it from moduleWideAdvisories", id)
		}
	}
	for _, flavour := range []struct {
		name string
		args []string
	}{
		{"main", []string{"./cmd/scheduler", "./cmd/archfilter-placement", "./cmd/kubectl-archfilter"}},
		{"k8s1.35", []string{"-modfile=go.k8s1.35.mod", "-tags=k8s1.35", "./cmd/scheduler-plugins"}},
	} {
		cmd := exec.Command("go", append([]string{"list", "-deps"}, flavour.args...)...)
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), "GOFLAGS=")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps (%s): %v", flavour.name, err)
		}
		pkgs := strings.Fields(string(out))
		if len(pkgs) < 100 {
			t.Fatalf("go list -deps (%s) listed %d packages", flavour.name, len(pkgs))
		}
		for id, prefix := range moduleWideAdvisories {
			for _, p := range pkgs {
				if strings.HasPrefix(p, prefix) {
					t.Errorf("%s: the %s flavour links %s, which the allow-list says it does not", id, flavour.name, p)
				}
			}
		}
	}
}

func TestJudge(t *testing.T) {
	scan := parseFile(t, "testdata/scan.json")
	// The k8s1.35 flavour's scan finds GO-2026-0001 only.
	other := *scan
	other.Reachable = scan.Reachable[:1]
	results := map[string]*Result{"main": scan, "k8s1.35": &other}
	today := time.Date(2026, 11, 26, 15, 0, 0, 0, time.UTC)
	ids := func(js []Judged) []string {
		var s []string
		for _, j := range js {
			s = append(s, j.Flavour+"/"+j.Finding.ID)
		}
		return s
	}
	entryIDs := func(es []Entry) []string {
		var s []string
		for _, e := range es {
			s = append(s, e.ID)
		}
		return s
	}
	for _, tc := range []struct {
		name                 string
		allow                string
		unexplained, allowed []string
		expired, unmatched   []string
		failed               bool
	}{
		{
			name:        "empty allow-list: every reachable finding fails",
			allow:       "[]",
			unexplained: []string{"k8s1.35/GO-2026-0001", "main/GO-2026-0001", "main/GO-2026-0004"},
			failed:      true,
		},
		{
			name: "every finding explained; imported and required ones need no entry",
			allow: "- {id: GO-2026-0001, reason: r, expires: \"2026-12-31\"}\n" +
				"- {id: GO-2026-0004, reason: r, expires: \"2026-11-26\"}\n",
			allowed: []string{"k8s1.35/GO-2026-0001", "main/GO-2026-0001", "main/GO-2026-0004"},
		},
		{
			name: "an entry expired yesterday: its finding fails again, and so does the entry",
			allow: "- {id: GO-2026-0001, reason: r, expires: \"2026-12-31\"}\n" +
				"- {id: GO-2026-0004, reason: r, expires: \"2026-11-25\"}\n",
			allowed:     []string{"k8s1.35/GO-2026-0001", "main/GO-2026-0001"},
			unexplained: []string{"main/GO-2026-0004"},
			expired:     []string{"GO-2026-0004"},
			failed:      true,
		},
		{
			name: "an entry restricted to the other flavour does not explain main's finding",
			allow: "- {id: GO-2026-0001, reason: r, expires: \"2026-12-31\", flavours: [k8s1.35]}\n" +
				"- {id: GO-2026-0004, reason: r, expires: \"2026-12-31\"}\n",
			allowed:     []string{"k8s1.35/GO-2026-0001", "main/GO-2026-0004"},
			unexplained: []string{"main/GO-2026-0001"},
			failed:      true,
		},
		{
			name: "an entry that matches nothing is reported, not failed; an expired one fails",
			allow: "- {id: GO-2026-0001, reason: r, expires: \"2026-12-31\"}\n" +
				"- {id: GO-2026-0004, reason: r, expires: \"2026-12-31\"}\n" +
				"- {id: GO-2026-0002, reason: only imported, expires: \"2026-12-31\"}\n" +
				"- {id: GO-2026-0009, reason: fixed long ago, expires: \"2026-01-01\"}\n",
			allowed:   []string{"k8s1.35/GO-2026-0001", "main/GO-2026-0001", "main/GO-2026-0004"},
			unmatched: []string{"GO-2026-0002"},
			expired:   []string{"GO-2026-0009"},
			failed:    true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allow, err := LoadAllowList(writeAllowList(t, tc.allow))
			if err != nil {
				t.Fatal(err)
			}
			v := Judge(results, allow, today)
			for _, c := range []struct {
				what      string
				want, got []string
			}{
				{"unexplained", tc.unexplained, ids(v.Unexplained)},
				{"allowed", tc.allowed, ids(v.Allowed)},
				{"expired", tc.expired, entryIDs(v.Expired)},
				{"unmatched", tc.unmatched, entryIDs(v.Unmatched)},
			} {
				if diff := cmp.Diff(c.want, c.got); diff != "" {
					t.Errorf("%s (-want,+got):\n%s", c.what, diff)
				}
			}
			if v.Failed() != tc.failed {
				t.Errorf("Failed() = %v, want %v", v.Failed(), tc.failed)
			}
			var out strings.Builder
			if err := WriteReport(&out, results, v); err != nil {
				t.Fatal(err)
			}
			for _, u := range v.Unexplained {
				if !strings.Contains(out.String(), u.Finding.ID) {
					t.Errorf("report does not name unexplained %s:\n%s", u.Finding.ID, out.String())
				}
			}
			for _, e := range v.Unmatched {
				if !strings.Contains(out.String(), "allow-list entry "+e.ID+" matches no reachable finding") {
					t.Errorf("report does not name unmatched entry %s:\n%s", e.ID, out.String())
				}
			}
		})
	}
}
