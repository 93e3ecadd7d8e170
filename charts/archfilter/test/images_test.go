package charttest

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// One version scheme: make image and make release push
// $IMAGE:$VERSION[-k8s1.35] and the companion's image, named from $IMAGE
// (hack/deploy/lib.sh flavour_image and flavour_tag); the chart names the
// companion's image from image.repository the same way, and the values
// they print, and the recipes of docs/install.md, run exactly those images.

// pushedImages is what make image and make release push for IMAGE and
// VERSION, one reference per flavour, asked of hack/deploy/lib.sh itself.
// placementImage sets PLACEMENT_IMAGE (empty: unset, the default name).
func pushedImages(t *testing.T, image, placementImage, version string, flavours ...string) []string {
	t.Helper()
	out := libSh(t, `for f in "$@"; do echo "$(flavour_image "$f"):$(flavour_tag "$f" "$VERSION")"; done`,
		image, placementImage, version, flavours...)
	return strings.Fields(out)
}

// libSh runs script with hack/deploy/lib.sh sourced, IMAGE, PLACEMENT_IMAGE
// (when set) and VERSION in its environment and args as "$@".
func libSh(t *testing.T, script, image, placementImage, version string, args ...string) string {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"-c", "set -euo pipefail; source hack/deploy/lib.sh; " + script, "lib.sh"}, args...)...)
	cmd.Dir = repoRoot()
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "PLACEMENT_IMAGE=") && !strings.HasPrefix(e, "IMAGE=") && !strings.HasPrefix(e, "VERSION=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, "IMAGE="+image, "VERSION="+version)
	if placementImage != "" {
		cmd.Env = append(cmd.Env, "PLACEMENT_IMAGE="+placementImage)
	}
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s: %v\n%s", script, err, stderr)
	}
	return string(out)
}

// renderedImages is every container image the chart would run: the
// Deployments' and the hook Jobs', sorted, without duplicates.
func renderedImages(t *testing.T, values map[string]any) (images []string, notes string) {
	t.Helper()
	rel, err := dryRun(t, values, renderOpts{})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	var objs []k8sruntime.Object
	for _, m := range append([]string{rel.Manifest}, hookManifests(rel.Hooks)...) {
		o, err := decodeAll([]byte(m))
		if err != nil {
			t.Fatalf("%v\n%s", err, m)
		}
		objs = append(objs, o...)
	}
	var specs []corev1.PodSpec
	for _, d := range of[*appsv1.Deployment](objs) {
		specs = append(specs, d.Spec.Template.Spec)
	}
	for _, j := range of[*batchv1.Job](objs) {
		specs = append(specs, j.Spec.Template.Spec)
	}
	for _, s := range specs {
		for _, c := range append(s.InitContainers, s.Containers...) {
			images = append(images, c.Image)
		}
	}
	slices.Sort(images)
	return slices.Compact(images), rel.Info.Notes
}

func hookManifests(hooks []*release.Hook) []string {
	var out []string
	for _, h := range hooks {
		out = append(out, h.Manifest)
	}
	return out
}

// TestPlacementImageNamedFromScheduler: unless placement.image says otherwise,
// the companion (and the heal watch) runs the scheduler's repository with
// -placement in place of -scheduler, at image.tag, which is where make image
// and make release push it.
func TestPlacementImageNamedFromScheduler(t *testing.T) {
	appVersion := loadChart(t).Metadata.AppVersion
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, values string
		want         string // the companion's image
		// pushed: the same image as make image IMAGE=<image.repository>
		// VERSION=<image.tag or appVersion> pushes it.
		pushed bool
	}{
		{name: "defaults", values: "placement: {enabled: true}", want: "archfilter/archfilter-placement:" + appVersion, pushed: true},
		{
			name:   "the scheduler's repository and tag",
			values: "image: {repository: registry.example.com/team/archfilter-scheduler, tag: v1.2.3}\nplacement: {enabled: true}",
			want:   "registry.example.com/team/archfilter-placement:v1.2.3", pushed: true,
		},
		{
			name:   "a git describe tag of digits only, as make image's --set-string gives it",
			values: "image: {repository: registry.example.com:5000/archfilter-scheduler, tag: \"1785754\"}\nscheduler: {enabled: false}\nplacement: {enabled: true}",
			want:   "registry.example.com:5000/archfilter-placement:1785754", pushed: true,
		},
		{
			name:   "a repository without the -scheduler suffix",
			values: "image: {repository: registry.example.com/archfilter, tag: v1.2.3}\nplacement: {enabled: true}",
			want:   "registry.example.com/archfilter-placement:v1.2.3", pushed: true,
		},
		{
			name:   "the k8s1.35 flavour: the companion has one build, without the suffix",
			values: "image: {repository: r.example.com/archfilter-scheduler, tag: v1.2.3-k8s1.35, flavour: k8s1.35}\nplacement: {enabled: true}",
			want:   "r.example.com/archfilter-placement:v1.2.3",
		},
		{
			name:   "the k8s1.35 flavour at appVersion",
			values: "image: {repository: r.example.com/archfilter-scheduler, flavour: k8s1.35}\nplacement: {enabled: true}",
			want:   "r.example.com/archfilter-placement:" + appVersion, pushed: true,
		},
		{
			name:   "its own repository",
			values: "image: {repository: r.example.com/archfilter-scheduler, tag: v1.2.3}\nplacement: {enabled: true, image: {repository: other.example.com/placement}}",
			want:   "other.example.com/placement:v1.2.3",
		},
		{
			name:   "its own tag",
			values: "image: {repository: r.example.com/archfilter-scheduler, tag: v1.2.3}\nplacement: {enabled: true, image: {tag: v1.2.4}}",
			want:   "r.example.com/archfilter-placement:v1.2.4",
		},
		{
			name:   "its own digest, never the scheduler's",
			values: "image: {repository: r.example.com/archfilter-scheduler, tag: v1.2.3, digest: sha256:" + strings.Repeat("cd", 32) + "}\nplacement: {enabled: true, image: {digest: " + digest + "}}",
			want:   "r.example.com/archfilter-placement@" + digest,
		},
		{
			name:   "the heal watch",
			values: "image: {repository: r.example.com/archfilter-scheduler, tag: v1.2.3}\nheal: {enabled: true}",
			want:   "r.example.com/archfilter-placement:v1.2.3", pushed: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var values map[string]any
			if err := yaml.Unmarshal([]byte(tc.values), &values); err != nil {
				t.Fatal(err)
			}
			objs := mustRender(t, values, renderOpts{})
			var got []string
			for _, d := range of[*appsv1.Deployment](objs) {
				if strings.HasSuffix(d.Name, "-placement") || strings.HasSuffix(d.Name, "-heal") {
					got = append(got, d.Spec.Template.Spec.Containers[0].Image)
				}
			}
			if diff := cmp.Diff([]string{tc.want}, got); diff != "" {
				t.Errorf("the companion's image (-want,+got):\n%s", diff)
			}
			if !tc.pushed {
				return
			}
			img, _ := values["image"].(map[string]any)
			repo, tag := "archfilter/archfilter-scheduler", appVersion
			if r, ok := img["repository"].(string); ok {
				repo = r
			}
			if v, ok := img["tag"].(string); ok {
				tag = v
			}
			if pushed := pushedImages(t, repo, "", tag, "placement"); !slices.Equal(pushed, []string{tc.want}) {
				t.Errorf("make image IMAGE=%s VERSION=%s pushes the companion to %v; the chart runs %s", repo, tag, pushed, tc.want)
			}
		})
	}
}

// TestPrintedValuesRunPushedImages: the values make image and make release
// print (hack/deploy/lib.sh helm_values and helm_set) make the chart in the
// tree run exactly the images they pushed, in every mode, with or without a
// PLACEMENT_IMAGE of its own.
func TestPrintedValuesRunPushedImages(t *testing.T) {
	modes := map[string]string{
		"the scheduler":                  "",
		"the scheduler and placement":    "placement: {enabled: true}",
		"placement alone":                "scheduler: {enabled: false}\nplacement: {enabled: true}",
		"the scheduler and heal":         "heal: {enabled: true}",
		"the k8s1.35 scheduler and heal": "image: {flavour: k8s1.35}\nheal: {enabled: true}",
	}
	for _, tc := range []struct{ image, placementImage, version string }{
		{"registry.example.com/archfilter/archfilter-scheduler", "", "v1.2.3"},
		{"127.0.0.1:5001/archfilter/archfilter-scheduler", "", "1785754"},
		{"127.0.0.1:5001/archfilter/archfilter-scheduler", "", "v0.1.0-3-g1785754-dirty"},
		{"registry.example.com/archfilter", "", "v1.2.3"},
		{"registry.example.com/archfilter/archfilter-scheduler", "other.example.com/companion", "v1.2.3"},
	} {
		printed := libSh(t, `helm_values "$VERSION"`, tc.image, tc.placementImage, tc.version)
		set := strings.TrimSpace(libSh(t, `helm_set "$VERSION"`, tc.image, tc.placementImage, tc.version))
		fromSet := setFlagsToValues(t, set)
		for mode, modeValues := range modes {
			t.Run(tc.image+" "+tc.placementImage+" "+tc.version+": "+mode, func(t *testing.T) {
				var flavours []string
				var base map[string]any
				if err := yaml.Unmarshal([]byte(modeValues), &base); err != nil {
					t.Fatal(err)
				}
				if s, _ := base["scheduler"].(map[string]any); s == nil || s["enabled"] != false {
					flavours = append(flavours, "main")
					if f, _ := base["image"].(map[string]any); f != nil && f["flavour"] == "k8s1.35" {
						flavours[0] = "k8s1.35"
					}
				}
				if strings.Contains(modeValues, "placement") || strings.Contains(modeValues, "heal") {
					flavours = append(flavours, "placement")
				}
				want := pushedImages(t, tc.image, tc.placementImage, tc.version, flavours...)
				slices.Sort(want)
				for name, v := range map[string]map[string]any{"helm-values.yaml": mustValues(t, printed), "--set " + set: fromSet} {
					got, notes := renderedImages(t, merge(base, v))
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("with %s: images (-pushed,+run):\n%s", name, diff)
					}
					if strings.Contains(notes, "not published") {
						t.Errorf("with %s: the notes still warn:\n%s", name, notes)
					}
				}
			})
		}
	}
}

// setFlagsToValues reads "--set a.b=c --set-string d=e" into values, as
// helm does for these flags (dotted paths, string values).
func setFlagsToValues(t *testing.T, flags string) map[string]any {
	t.Helper()
	values := map[string]any{}
	f := strings.Fields(flags)
	if len(f)%2 != 0 {
		t.Fatalf("%q: want flag value pairs", flags)
	}
	for i := 0; i < len(f); i += 2 {
		if f[i] != "--set" && f[i] != "--set-string" {
			t.Fatalf("%q: unexpected %s", flags, f[i])
		}
		path, value, ok := strings.Cut(f[i+1], "=")
		if !ok {
			t.Fatalf("%q: %s has no value", flags, f[i+1])
		}
		if f[i] == "--set" && regexp.MustCompile(`^[0-9]+$`).MatchString(value) {
			t.Errorf("%s %s: helm reads %s as a number (the schema refuses it); use --set-string", f[i], f[i+1], value)
		}
		keys := strings.Split(path, ".")
		m := values
		for _, k := range keys[:len(keys)-1] {
			next, _ := m[k].(map[string]any)
			if next == nil {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[keys[len(keys)-1]] = value
	}
	return values
}

func mustValues(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v\n%s", err, s)
	}
	return v
}

// merge returns a deep merge of b over a (maps merged, other values replaced).
func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		am, aok := out[k].(map[string]any)
		bm, bok := v.(map[string]any)
		if aok && bok {
			out[k] = merge(am, bm)
			continue
		}
		out[k] = v
	}
	return out
}

// recipes are the values blocks of docs/install.md's "Managed platforms",
// each named by the bold label before it ("EKS with Karpenter", "GKE", "AKS").
func recipes(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	var (
		in, fence bool
		label     string
		block     []string
	)
	label1 := regexp.MustCompile(`^\*\*([^*]+?)\.?\*\*`)
	sc := bufio.NewScanner(strings.NewReader(string(readFile(t, "docs/install.md"))))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case fence && strings.TrimSpace(line) == "```":
			fence = false
			if in && label != "" {
				out[label] = strings.Join(block, "\n")
				label = ""
			}
		case fence:
			block = append(block, line)
		case strings.HasPrefix(line, "```"):
			fence, block = strings.TrimSpace(line) == "```yaml", nil
			if !fence {
				// Another language: skip to its end.
				for sc.Scan() && strings.TrimSpace(sc.Text()) != "```" {
				}
			}
		case strings.HasPrefix(line, "#"):
			in = strings.TrimSpace(strings.TrimLeft(line, "#")) == "Managed platforms"
			label = ""
		case in:
			if m := label1.FindStringSubmatch(line); m != nil {
				label = m[1]
			}
		}
	}
	return out
}

// TestRecipesPullReleasedImages: each managed platform's recipe in
// docs/install.md names the scheduler's repository and a release tag, and the
// chart run with it pulls exactly the images `make release IMAGE=<its
// image.repository> VERSION=<its image.tag>` pushes; its install notes do not
// warn of unpublished images.
func TestRecipesPullReleasedImages(t *testing.T) {
	found := recipes(t)
	for _, want := range []string{"EKS with Karpenter", "GKE", "AKS"} {
		if _, ok := found[want]; !ok {
			t.Errorf("docs/install.md, \"Managed platforms\": no recipe labelled **%s.** (found %v)", want, mapsKeysSorted(found))
		}
	}
	for name, recipe := range found {
		t.Run(name, func(t *testing.T) {
			values := mustValues(t, recipe)
			img, _ := values["image"].(map[string]any)
			repo, _ := img["repository"].(string)
			tag, _ := img["tag"].(string)
			if repo == "" || tag == "" {
				t.Fatalf("the recipe sets image.repository %q and image.tag %q: set both, to what make release was given (IMAGE, VERSION)", repo, tag)
			}
			if !regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`).MatchString(tag) {
				t.Errorf("image.tag %q is not a tag make release pushes (vMAJOR.MINOR.PATCH[-pre-release])", tag)
			}
			var flavours []string
			if s, _ := values["scheduler"].(map[string]any); s == nil || s["enabled"] != false {
				flavours = append(flavours, "main")
			}
			if p, _ := values["placement"].(map[string]any); p != nil && p["enabled"] == true {
				flavours = append(flavours, "placement")
				if pi, _ := p["image"].(map[string]any); pi != nil && (pi["repository"] != nil || pi["tag"] != nil) {
					t.Errorf("placement.image %v: let the chart name the companion from image (as make release names it), or the two drift apart", pi)
				}
			}
			want := pushedImages(t, repo, "", tag, flavours...)
			slices.Sort(want)
			got, notes := renderedImages(t, values)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("images (-make release pushes,+the recipe runs):\n%s", diff)
			}
			if strings.Contains(notes, "not published") {
				t.Errorf("the notes warn of unpublished images:\n%s", notes)
			}
		})
	}
}

func mapsKeysSorted(m map[string]string) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestNotesWarnUnpublishedImages: the install notes open with a warning while
// an image the release runs is still in an unpublished default repository,
// naming the image and the values that set it, and say nothing of it once
// the repository is set.
func TestNotesWarnUnpublishedImages(t *testing.T) {
	appVersion := loadChart(t).Metadata.AppVersion
	const repo = "registry.example.com/archfilter/archfilter-scheduler"
	scheduler := "archfilter/archfilter-scheduler:" + appVersion + "  (image.repository, image.tag)"
	companion := "archfilter/archfilter-placement:" + appVersion + "  (named from image.repository and image.tag, or set placement.image.repository)"
	for _, tc := range []struct {
		name, values string
		want         []string // the images named; none: no warning
	}{
		{name: "defaults", want: []string{scheduler}},
		{name: "the scheduler's digest, the default repository", values: "image: {digest: sha256:" + strings.Repeat("a", 64) + "}", want: []string{"archfilter/archfilter-scheduler@sha256:" + strings.Repeat("a", 64) + "  (image.repository, image.tag)"}},
		{name: "the scheduler's repository set", values: "image: {repository: " + repo + "}"},
		{name: "the scheduler's repository and tag set", values: "image: {repository: " + repo + ", tag: v1.2.3}"},
		{name: "placement beside the scheduler, defaults", values: "placement: {enabled: true}", want: []string{scheduler, companion}},
		{name: "placement beside the scheduler, image.repository set", values: "image: {repository: " + repo + "}\nplacement: {enabled: true}"},
		{name: "placement beside the scheduler, only the companion's repository set", values: "placement: {enabled: true, image: {repository: registry.example.com/p}}", want: []string{scheduler}},
		{name: "placement alone, defaults", values: "scheduler: {enabled: false}\nplacement: {enabled: true}", want: []string{companion}},
		{name: "placement alone, image.repository set", values: "image: {repository: " + repo + "}\nscheduler: {enabled: false}\nplacement: {enabled: true}"},
		{name: "placement alone, its own repository", values: "scheduler: {enabled: false}\nplacement: {enabled: true, image: {repository: registry.example.com/p}}"},
		{
			name:   "placement alone, its repository set to the default",
			values: "image: {repository: " + repo + "}\nscheduler: {enabled: false}\nplacement: {enabled: true, image: {repository: archfilter/archfilter-placement}}",
			want:   []string{"archfilter/archfilter-placement:" + appVersion + "  (placement.image.repository, placement.image.tag)"},
		},
		{name: "heal, defaults", values: "heal: {enabled: true}", want: []string{scheduler, companion}},
		{name: "heal, image.repository set", values: "image: {repository: " + repo + "}\nheal: {enabled: true}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var values map[string]any
			if err := yaml.Unmarshal([]byte(tc.values), &values); err != nil {
				t.Fatal(err)
			}
			rel, err := dryRun(t, values, renderOpts{})
			if err != nil {
				t.Fatal(err)
			}
			notes := rel.Info.Notes
			const head = "WARNING: this release runs images that are not published"
			if len(tc.want) == 0 {
				if strings.Contains(notes, "not published") {
					t.Errorf("the notes warn:\n%s", notes)
				}
				return
			}
			if !strings.HasPrefix(notes, head) {
				t.Fatalf("the notes do not open with %q:\n%s", head, notes)
			}
			// The lines naming images: indented, between the head and "Push them".
			warning, _, _ := strings.Cut(notes, "\nPush them")
			var named []string
			for _, l := range strings.Split(warning, "\n")[1:] {
				if strings.HasPrefix(l, "  ") {
					named = append(named, strings.TrimSpace(l))
				}
			}
			if diff := cmp.Diff(tc.want, named); diff != "" {
				t.Errorf("images named (-want,+got):\n%s\nnotes:\n%s", diff, notes)
			}
			for _, s := range []string{"make release IMAGE=", "--set image.repository=", "--set image.tag=", "docs/install.md"} {
				if !strings.Contains(notes, s) {
					t.Errorf("the warning does not say %q:\n%s", s, notes)
				}
			}
		})
	}
}
