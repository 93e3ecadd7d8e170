package kubectlplugin

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/distribution/reference"

	"github.com/archfilter/archfilter/pkg/podplatform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// Results of a narrowing check (narrowingView.Result).
const (
	// narrowed: the pinned digest is one platform's manifest of a multi-platform index.
	narrowed = "narrowed"
	// narrowingUnknown: the tags could not be listed or read, so it is not known.
	narrowingUnknown = "unknown"
)

// narrowingView is a workload's image pinned by the digest of one platform's manifest
// where a tag of its repository names a multi-platform index that lists it.
type narrowingView struct {
	Workload  string `json:"workload"`
	Container string `json:"container"`
	Image     string `json:"image"`
	// Digest is the pinned manifest's, Platform its one platform.
	Digest   string `json:"digest"`
	Platform string `json:"platform,omitempty"`
	// Index is the repository:tag whose index lists Digest, with its digest and
	// platforms.
	Index          string   `json:"index,omitempty"`
	IndexDigest    string   `json:"indexDigest,omitempty"`
	IndexPlatforms []string `json:"indexPlatforms,omitempty"`
	// Result is narrowed or unknown (the message says why).
	Result  string `json:"result"`
	Message string `json:"message"`
}

// narrowingOf checks every image pinned by digest in workloads, once per image.
func narrowingOf(ctx context.Context, s *session, workloads []workload, views []workloadView) []narrowingView {
	type use struct{ workload, container, image string }
	var (
		uses   []use
		images []string
	)
	for i, w := range workloads {
		resolved := map[string]bool{}
		for _, img := range views[i].Images {
			resolved[img.Image] = img.Error == "" && img.NotRead == ""
		}
		podplatform.ForEachImage(w.Pod, func(img podplatform.Image) bool {
			if !resolved[img.Reference] || !strings.Contains(img.Reference, "@") {
				return true
			}
			uses = append(uses, use{workload: workloadName(views[i]), container: img.Name, image: img.Reference})
			if !slices.Contains(images, img.Reference) {
				images = append(images, img.Reference)
			}
			return true
		})
	}
	results := concurrently(images, func(image string) *narrowingView { return narrowingOfImage(ctx, s, image) })
	byImage := map[string]*narrowingView{}
	for i, image := range images {
		byImage[image] = results[i]
	}
	var out []narrowingView
	for _, u := range uses {
		n := byImage[u.image]
		if n == nil {
			continue
		}
		v := *n
		v.Workload, v.Container = u.workload, u.container
		if v.Result == narrowed {
			v.Message = fmt.Sprintf("%s %s pins %s (%s manifest of index %s with %s): the pod runs on %s only",
				u.workload, u.container, shortDigest(v.Digest), v.Platform, v.Index, strings.Join(v.IndexPlatforms, ", "), v.Platform)
		}
		out = append(out, v)
	}
	return out
}

// narrowingOfImage says whether image, pinned by digest, names one platform's manifest
// of an index a tag names: the tag of the reference when it has one, else among
// likelyIndexTags of one page of tags. Nil when it does not, or is an index itself.
func narrowingOfImage(ctx context.Context, s *session, image string) *narrowingView {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return nil
	}
	digested, ok := named.(reference.Digested)
	if !ok {
		return nil
	}
	pinned := digested.Digest().String()
	d, err := s.describe(ctx, image)
	if err != nil || len(d.Manifests) != 1 || d.Manifests[0].Kind != resolver.ManifestImage || d.Manifests[0].Digest != d.Digest {
		return nil // an index, an artifact, or already reported as unresolved
	}
	v := &narrowingView{Image: image, Digest: pinned, Platform: d.Manifests[0].Platform.String()}
	repoName := named.Name()
	var tags []string
	if tagged, ok := named.(reference.Tagged); ok {
		tags = []string{tagged.Tag()}
	} else {
		repo, err := s.resolver.OpenRepository(ctx, resolver.Request{Image: image, Credentials: s.credentials})
		if err == nil {
			tags, err = repo.Tags(ctx, maxTagsListed)
		}
		if err != nil {
			v.Result = narrowingUnknown
			v.Message = fmt.Sprintf("%s pins a single-platform manifest (%s); whether a tag names an index that lists it is unknown: the tags of %s could not be listed: %s",
				image, v.Platform, repoName, shortError(err))
			return v
		}
		tags = likelyIndexTags(tags)
	}
	for _, tag := range tags {
		idx, err := s.describe(ctx, repoName+":"+tag)
		if err != nil {
			continue
		}
		var platforms []string
		listed := false
		for _, m := range idx.Manifests {
			if m.Kind != resolver.ManifestImage {
				continue
			}
			platforms = append(platforms, m.Platform.String())
			listed = listed || m.Digest == pinned
		}
		if listed && len(platforms) > 1 && idx.Digest != pinned {
			v.Result, v.Index, v.IndexDigest, v.IndexPlatforms = narrowed, repoName+":"+tag, idx.Digest, platforms
			return v
		}
	}
	return nil
}

func printNarrowing(w io.Writer, ns []narrowingView) {
	tw := newTable(w)
	fmt.Fprintln(tw, "WORKLOAD\tCONTAINER\tDIGEST PIN\tFINDING")
	for _, n := range ns {
		msg := n.Message
		if n.Result == narrowed {
			msg = fmt.Sprintf("pins %s (%s manifest of index %s with %s): runs on %s only", shortDigest(n.Digest), n.Platform, n.Index, strings.Join(n.IndexPlatforms, ", "), n.Platform)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n.Workload, n.Container, n.Result, msg)
	}
	_ = tw.Flush()
}
