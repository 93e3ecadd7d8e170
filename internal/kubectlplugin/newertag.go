package kubectlplugin

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/distribution/reference"
	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/archfilter/archfilter/pkg/platform"
	"github.com/archfilter/archfilter/pkg/podplatform"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// Results of a newer-tag search (newerTagView.Result), documented in
// docs/kubectl-plugin.md.
const (
	// newerFound: a newer tag runs on a platform the image lacks.
	newerFound = "found"
	// newerNone: no newer tag read runs on a missing platform.
	newerNone = "none"
	// newerNotVersioned: the image's tag is not a version (latest, a digest pin), so
	// no tag is newer.
	newerNotVersioned = "notVersioned"
	// newerTagsRefused: the registry refused the tags list; the reason is in Message.
	newerTagsRefused = "tagsRefused"
)

// newerTagView is the search for a newer tag of an image that blocks platforms of the
// cluster's nodes.
type newerTagView struct {
	Image string `json:"image"`
	// Platforms are the image's; Missing the node platforms it does not run on.
	Platforms string   `json:"platforms"`
	Missing   []string `json:"missing"`
	// Suggested is the tag to move to, as an image reference (SuggestedImage), and
	// Adds the missing platforms it runs on.
	Suggested      string   `json:"suggested,omitempty"`
	SuggestedImage string   `json:"suggestedImage,omitempty"`
	Adds           []string `json:"adds,omitempty"`
	// TagsListed and TagsRead are the bounds' use: tags in the one page listed, and
	// newer tags whose manifests were read.
	TagsListed int `json:"tagsListed"`
	TagsRead   int `json:"tagsRead"`
	// Result is found, none, notVersioned or tagsRefused.
	Result  string `json:"result"`
	Message string `json:"message"`
}

// blockedImage is an image that does not run on some node platforms, with the
// credentials of a pod that uses it.
type blockedImage struct {
	image       string
	platforms   platform.Set
	missing     []platform.NodePlatform
	credentials resolver.Credentials
}

// findNewerTags searches each blocked image's repository, at most maxConcurrentImages at
// a time.
func findNewerTags(ctx context.Context, s *session, compat platform.Compat, blocked []blockedImage) []newerTagView {
	return concurrently(blocked, func(b blockedImage) newerTagView { return newerTagOf(ctx, s, compat, b) })
}

// newerTagOf lists one page of the image's tags, keeps the versions newer than its tag
// (same prefix and suffix: "v2.3" after "v2", "1.28-alpine" after "1.27-alpine"),
// reads the newest maxTagsRead of them and suggests the oldest that runs on the missing
// platforms (every one of them if a tag does, else some), preferring its own major
// version.
func newerTagOf(ctx context.Context, s *session, compat platform.Compat, b blockedImage) newerTagView {
	v := newerTagView{Image: b.image, Platforms: setString(b.platforms)}
	for _, np := range b.missing {
		v.Missing = append(v.Missing, np.String())
	}
	lacks := fmt.Sprintf("%s runs on %s only", b.image, v.Platforms)
	named, err := reference.ParseNormalizedNamed(b.image)
	if err != nil {
		v.Result, v.Message = newerNotVersioned, lacks+"; "+err.Error()
		return v
	}
	tagged, ok := named.(reference.Tagged)
	_, digested := named.(reference.Digested)
	var current tagVersion
	if ok && !digested {
		current, ok = parseTagVersion(tagged.Tag())
	}
	if !ok || digested {
		v.Result, v.Message = newerNotVersioned, lacks+"; its tag is not a version, so no tag is newer"
		return v
	}
	repo, err := s.resolver.OpenRepository(ctx, resolver.Request{Image: b.image, Credentials: b.credentials})
	var tags []string
	if err == nil {
		tags, err = repo.Tags(ctx, maxTagsListed)
	}
	if err != nil {
		v.Result = newerTagsRefused
		v.Message = fmt.Sprintf("%s; no newer tag looked for: the registry refused the tags list of %s (%s)", lacks, named.Name(), shortError(err))
		return v
	}
	v.TagsListed = len(tags)
	newer := newerTags(current, tags)
	if len(newer) > maxTagsRead {
		newer = newer[len(newer)-maxTagsRead:]
	}
	adds := make([][]platform.NodePlatform, len(newer))
	for i := len(newer) - 1; i >= 0; i-- {
		res := s.resolver.Resolve(ctx, resolver.Request{Image: named.Name() + ":" + newer[i].tag, Credentials: b.credentials})
		v.TagsRead++
		if res.Err != nil {
			continue
		}
		expanded := compat.Expand(res.Platforms)
		for _, np := range b.missing {
			if expanded.MatchesNode(np) {
				adds[i] = append(adds[i], np)
			}
		}
	}
	best := -1
	better := func(i int) bool {
		if best < 0 {
			return true
		}
		sameMajor := func(j int) bool { return newer[j].major() == current.major() }
		if sameMajor(i) != sameMajor(best) {
			return sameMajor(i)
		}
		all := func(j int) bool { return len(adds[j]) == len(b.missing) }
		if all(i) != all(best) {
			return all(i)
		}
		return false // newer is oldest first: the first seen is the oldest
	}
	for i := range newer {
		if len(adds[i]) > 0 && better(i) {
			best = i
		}
	}
	if best < 0 {
		v.Result = newerNone
		v.Message = fmt.Sprintf("%s; none of the %d newer tags read (of %d listed) adds %s", lacks, v.TagsRead, v.TagsListed, strings.Join(v.Missing, ","))
		if v.TagsRead == 0 {
			v.Message = fmt.Sprintf("%s; no newer version tag among the %d listed", lacks, v.TagsListed)
		}
		return v
	}
	v.Result, v.Suggested, v.SuggestedImage = newerFound, newer[best].tag, named.Name()+":"+newer[best].tag
	for _, np := range adds[best] {
		v.Adds = append(v.Adds, np.String())
	}
	v.Message = fmt.Sprintf("%s; %s adds %s", lacks, v.Suggested, strings.Join(v.Adds, ","))
	return v
}

// blockedImages lists, in first-seen order, the images of ws that keep their rows
// off node platforms the workload needs (every such image, not only the first),
// with the platforms they miss; credentials gives a workload's pod credentials.
func blockedImages(ws []workload, rows []reportRow, results map[string]resolver.Result, nps []platform.NodePlatform, compat platform.Compat, credentials func(i int) resolver.Credentials) []blockedImage {
	var out []blockedImage
	index := map[string]int{}
	for i, row := range rows {
		if row.unchecked || row.Error != "" {
			continue
		}
		var imageSets []platform.Set
		podplatform.ForEachImage(ws[i].Pod, func(img podplatform.Image) bool {
			if res, ok := results[img.Reference]; ok && res.Err == nil {
				imageSets = append(imageSets, res.Platforms)
			}
			return true
		})
		for _, r := range row.On {
			if r.CanRun {
				continue
			}
			np := nps[slices.IndexFunc(nps, func(np platform.NodePlatform) bool { return np.String() == r.Platform })]
			if !needs(ws[i].Pod, imageSets, np) {
				continue
			}
			podplatform.ForEachImage(ws[i].Pod, func(img podplatform.Image) bool {
				res, ok := results[img.Reference]
				if !ok || res.Err != nil || compat.Expand(res.Platforms).MatchesNode(np) {
					return true
				}
				k, seen := index[img.Reference]
				if !seen {
					k = len(out)
					index[img.Reference] = k
					out = append(out, blockedImage{image: img.Reference, platforms: res.Platforms, credentials: credentials(i)})
				}
				if !slices.Contains(out[k].missing, np) {
					out[k].missing = append(out[k].missing, np)
				}
				return true
			})
		}
	}
	return out
}

// printNewerTags prints the searches after a report or why.
func printNewerTags(w io.Writer, vs []newerTagView) {
	if len(vs) == 0 {
		return
	}
	writeLine(w, "Newer tags:")
	for _, v := range vs {
		writeLine(w, "  %s", v.Message)
	}
}

// newerTagFor is the tag a report row's CSV suggests for a blocking image on a platform.
func newerTagFor(vs []newerTagView, image, nodePlatform string) string {
	for _, v := range vs {
		if v.Image == image && v.Result == newerFound && slices.Contains(v.Adds, nodePlatform) {
			return v.SuggestedImage
		}
	}
	return ""
}

func addNewerTagsFlag(cmd *cobra.Command, reg *registryFlags) {
	cmd.Flags().BoolVar(&reg.newerTags, "newer-tags", true, fmt.Sprintf("for each image that does not run on some node platform, look for a newer version tag of its repository that does (one page of %d tags, at most %d manifests read)", maxTagsListed, maxTagsRead))
}

// needs reports whether a workload whose pod is pod, and whose images run on
// imageSets, needs node platform np: the one rule for which images why and
// report look for a newer tag of, so that an image that lacks nothing the
// workload could use gets no line. A workload needs the platforms of the
// cluster's nodes that its own os/arch constraints (spec.os, nodeSelector,
// required node affinity) allow, of an operating system its images are built
// for: a newer tag may add an architecture, and a Linux image is not asked to
// run on Windows nodes.
func needs(pod *v1.Pod, imageSets []platform.Set, np platform.NodePlatform) bool {
	c := podplatform.OwnConstraintOf(pod)
	if (c.OS != nil && !c.OS.Has(np.OS)) || (c.Arch != nil && !c.Arch.Has(np.Architecture)) {
		return false
	}
	oses := sets.New[string]()
	for _, set := range imageSets {
		if set.IsAny() {
			continue
		}
		for _, p := range set.Platforms() {
			oses.Insert(p.OS)
		}
	}
	return oses.Len() == 0 || oses.Has(np.OS)
}

// neededPlatforms are the distinct platforms (os/arch) of nodes that pod, whose
// images are images, needs (needs), sorted.
func neededPlatforms(pod *v1.Pod, images []workloadImage, nodes []v1.Node) []platform.NodePlatform {
	var imageSets []platform.Set
	for _, img := range images {
		if img.Error == "" && img.NotRead == "" {
			imageSets = append(imageSets, img.set)
		}
	}
	var nps []platform.NodePlatform
	for i := range nodes {
		if np, ok := platform.FromNode(&nodes[i]); ok {
			np.WindowsBuild = ""
			if !slices.Contains(nps, np) && needs(pod, imageSets, np) {
				nps = append(nps, np)
			}
		}
	}
	slices.SortFunc(nps, func(a, b platform.NodePlatform) int { return strings.Compare(a.String(), b.String()) })
	return nps
}

// podBlockedImages lists a pod's images that miss some of the node platforms
// it needs (neededPlatforms).
func podBlockedImages(images []workloadImage, needed []platform.NodePlatform, compat platform.Compat, creds resolver.Credentials) []blockedImage {
	var out []blockedImage
	seen := map[string]bool{}
	for _, img := range images {
		if img.Error != "" || img.NotRead != "" || seen[img.Image] {
			continue
		}
		seen[img.Image] = true
		b := blockedImage{image: img.Image, platforms: img.set, credentials: creds}
		expanded := compat.Expand(img.set)
		for _, np := range needed {
			if !expanded.MatchesNode(np) {
				b.missing = append(b.missing, np)
			}
		}
		if len(b.missing) > 0 {
			out = append(out, b)
		}
	}
	return out
}
