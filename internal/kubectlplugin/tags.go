package kubectlplugin

import (
	"cmp"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Bounds of the registry requests that look at a repository's other tags (digest
// narrowing, newer tags), documented in docs/kubectl-plugin.md.
const (
	// maxTagsListed is the one page of tags asked for (tags/list?n=).
	maxTagsListed = 100
	// maxTagsRead is how many of those tags' manifests are read at most.
	maxTagsRead = 10
)

// tagVersion is a tag read as a version: "v2.3.1-alpine" is prefix "v", numbers
// [2 3 1] and suffix "-alpine". Tags compare only within one family (same prefix and
// suffix): "1.27-alpine" is never newer than "1.26".
type tagVersion struct {
	tag, prefix, suffix string
	nums                []int
}

var tagVersionRE = regexp.MustCompile(`^(v?)(\d{1,9}(?:\.\d{1,9}){0,3})(.*)$`)

func parseTagVersion(tag string) (tagVersion, bool) {
	m := tagVersionRE.FindStringSubmatch(tag)
	if m == nil {
		return tagVersion{}, false
	}
	v := tagVersion{tag: tag, prefix: m[1], suffix: m[3]}
	for _, n := range strings.Split(m[2], ".") {
		i, _ := strconv.Atoi(n)
		v.nums = append(v.nums, i)
	}
	return v, true
}

func (v tagVersion) sameFamily(o tagVersion) bool {
	return v.prefix == o.prefix && v.suffix == o.suffix
}

func (v tagVersion) major() int { return v.nums[0] }

// compare orders versions by their numbers, a missing number being 0: "v2" and "v2.0"
// are equal.
func (v tagVersion) compare(o tagVersion) int {
	for i := range max(len(v.nums), len(o.nums)) {
		var a, b int
		if i < len(v.nums) {
			a = v.nums[i]
		}
		if i < len(o.nums) {
			b = o.nums[i]
		}
		if c := cmp.Compare(a, b); c != 0 {
			return c
		}
	}
	return 0
}

// newerTags returns the tags of current's family newer than it, oldest first.
func newerTags(current tagVersion, tags []string) []tagVersion {
	var out []tagVersion
	for _, t := range tags {
		if v, ok := parseTagVersion(t); ok && v.sameFamily(current) && v.compare(current) > 0 {
			out = append(out, v)
		}
	}
	slices.SortStableFunc(out, func(a, b tagVersion) int { return a.compare(b) })
	return out
}

// likelyIndexTags orders tags for finding the index that lists a digest: "latest", then
// version tags newest first, then the others as listed; at most maxTagsRead.
func likelyIndexTags(tags []string) []string {
	var versions []tagVersion
	var others []string
	latest := false
	for _, t := range tags {
		if t == "latest" {
			latest = true
			continue
		}
		if v, ok := parseTagVersion(t); ok {
			versions = append(versions, v)
		} else {
			others = append(others, t)
		}
	}
	slices.SortStableFunc(versions, func(a, b tagVersion) int { return b.compare(a) })
	var out []string
	if latest {
		out = append(out, "latest")
	}
	for _, v := range versions {
		out = append(out, v.tag)
	}
	out = append(out, others...)
	if len(out) > maxTagsRead {
		out = out[:maxTagsRead]
	}
	return out
}
