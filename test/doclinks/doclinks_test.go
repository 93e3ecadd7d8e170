package doclinks

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// docs are the files whose links are checked: the front page, docs/ and the
// chart's README. Their links may point anywhere in the repository.
func docs(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md", "charts/archfilter/README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range more {
		rel, err := filepath.Rel(root, m)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestLinksResolve: every relative link of README.md, docs/*.md and the
// chart's README names a file or directory that exists, every #anchor into
// a Markdown file names one of its headings (GitHub's slugs) or <a> anchors,
// and every prose reference such as `install.md, "Uninstall"` names a
// heading of that file.
func TestLinksResolve(t *testing.T) {
	root := repoRoot(t)
	parsed := map[string]File{}
	parse := func(path string) (File, error) {
		if f, ok := parsed[path]; ok {
			return f, nil
		}
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			return File{}, err
		}
		f := Parse(string(b))
		parsed[path] = f
		return f, nil
	}
	checked := 0
	for _, doc := range docs(t, root) {
		f, err := parse(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range f.Links {
			if External(l.Dest) {
				continue
			}
			checked++
			target, anchor := Resolve(root, doc, l)
			info, err := os.Stat(filepath.Join(root, target))
			if err != nil {
				t.Errorf("%s:%d: %s: %s does not exist", doc, l.Line, show(l), target)
				continue
			}
			if !strings.HasSuffix(target, ".md") || info.IsDir() || (anchor == "" && l.Section == "") {
				continue
			}
			tf, err := parse(target)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case l.Section != "" && !HasSection(tf.Headings, l.Section):
				t.Errorf("%s:%d: %s: %s has no section %q (its headings: %s)", doc, l.Line, show(l), target, l.Section, strings.Join(tf.Headings, "; "))
			case anchor != "" && !tf.Anchors[anchor]:
				t.Errorf("%s:%d: %s: %s has no heading whose anchor is #%s%s", doc, l.Line, show(l), target, anchor, near(tf, anchor))
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d links checked: the parser lost them", checked)
	}
	t.Logf("%d links and section references checked", checked)
}

func show(l Link) string {
	if l.Section != "" {
		return l.Dest + `, "` + l.Section + `"`
	}
	return "(" + l.Dest + ")"
}

// near suggests the anchors sharing a word with the one not found.
func near(f File, anchor string) string {
	var out []string
	for a := range f.Anchors {
		for _, w := range strings.Split(anchor, "-") {
			if len(w) > 3 && strings.Contains(a, w) {
				out = append(out, "#"+a)
				break
			}
		}
	}
	if len(out) == 0 {
		return ""
	}
	slices.Sort(out)
	if len(out) > 5 {
		out = out[:5]
	}
	return " (did you mean " + strings.Join(out, ", ") + "?)"
}

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Configure: `ArchFilterArgs`", "configure-archfilterargs"},
		{"Team by team: `ArchFilterPolicy`", "team-by-team-archfilterpolicy"},
		{"make test's stages and CI's budget", "make-tests-stages-and-cis-budget"},
		{"A real node (`make e2e-node`)", "a-real-node-make-e2e-node"},
		{"The problem and the fix, on a real node", "the-problem-and-the-fix-on-a-real-node"},
		{"Pick a flavour: supported Kubernetes versions", "pick-a-flavour-supported-kubernetes-versions"},
		{"kubectl archfilter's documented output is tested", "kubectl-archfilters-documented-output-is-tested"},
		{"snake_case and dash-case stay", "snake_case-and-dash-case-stay"},
		{"Hosts `allowedRegistries` needs", "hosts-allowedregistries-needs"},
		{"[Linked](x.md) **bold** text", "linked-bold-text"},
		{"Überblick 1.37 / 1.38", "überblick-137--138"},
	} {
		t.Run(tc.heading, func(t *testing.T) {
			if got := Slug(RenderedText(tc.heading)); got != tc.want {
				t.Errorf("Slug(%q) = %q, want %q", tc.heading, got, tc.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	text := strings.Join([]string{
		"# Title",
		"See [install](docs/install.md#helm) and ![logo](img/logo.png \"Logo\").",
		"## Usage",
		"Code `[not](a-link.md)` and [a link](#usage).",
		"```sh",
		"# not a heading",
		"echo [x](y.md)",
		"```",
		"## Usage",
		"<a name=\"custom\"></a>",
		"A reference to placement.md, \"Misplaced",
		"pods\" across lines, and one to README \"Install\".",
		"",
		"[ref]: docs/ref.md#top",
		"   ```",
		"   [indented](fenced.md)",
		"   ```",
		"[out](https://example.com/x#y)",
	}, "\n")
	f := Parse(text)
	want := []Link{
		{Line: 2, Dest: "docs/install.md#helm"},
		{Line: 2, Dest: "img/logo.png"},
		{Line: 4, Dest: "#usage"},
		{Line: 11, Dest: "placement.md", Section: "Misplaced pods"},
		{Line: 12, Dest: "README", Section: "Install"},
		{Line: 14, Dest: "docs/ref.md#top"},
		{Line: 18, Dest: "https://example.com/x#y"},
	}
	if diff := cmp.Diff(want, f.Links); diff != "" {
		t.Errorf("links (-want,+got):\n%s", diff)
	}
	var anchors []string
	for a := range f.Anchors {
		anchors = append(anchors, a)
	}
	slices.Sort(anchors)
	if diff := cmp.Diff([]string{"custom", "title", "usage", "usage-1"}, anchors); diff != "" {
		t.Errorf("anchors (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Title", "Usage", "Usage"}, f.Headings); diff != "" {
		t.Errorf("headings (-want,+got):\n%s", diff)
	}
}

func TestResolve(t *testing.T) {
	root := repoRoot(t)
	for _, tc := range []struct {
		path         string
		link         Link
		target, anch string
	}{
		{"docs/install.md", Link{Dest: "placement.md#turning-the-mode-off"}, "docs/placement.md", "turning-the-mode-off"},
		{"docs/install.md", Link{Dest: "../README.md#install"}, "README.md", "install"},
		{"docs/install.md", Link{Dest: "#helm"}, "docs/install.md", "helm"},
		{"README.md", Link{Dest: "docs/install.md"}, "docs/install.md", ""},
		{"charts/archfilter/README.md", Link{Dest: "../../docs/install.md"}, "docs/install.md", ""},
		{"docs/design.md", Link{Dest: "README", Section: "Security and permissions"}, "README.md", ""},
		{"docs/install.md", Link{Dest: "placement.md", Section: "Install with Helm"}, "docs/placement.md", ""},
	} {
		target, anchor := Resolve(root, tc.path, tc.link)
		if target != tc.target || anchor != tc.anch {
			t.Errorf("Resolve(%s, %+v) = %s #%s, want %s #%s", tc.path, tc.link, target, anchor, tc.target, tc.anch)
		}
	}
}

func TestHasSection(t *testing.T) {
	headings := []string{"Configure: ArchFilterArgs", "Install", "A real node (make e2e-node)"}
	for _, tc := range []struct {
		section string
		want    bool
	}{
		{"Configure", true}, {"configure: `ArchFilterArgs`", true}, {"Install", true},
		{"A real node", true}, {"Operating it", false}, {"Inst", false},
	} {
		if got := HasSection(headings, tc.section); got != tc.want {
			t.Errorf("HasSection(%q) = %v, want %v", tc.section, got, tc.want)
		}
	}
}
