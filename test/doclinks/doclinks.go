// Package doclinks reads the Markdown of README.md and docs/ as GitHub renders
// it, as far as links go: the anchors a file's headings get, its relative
// links, and the prose references of the form `install.md, "Uninstall"`, so
// that a test can check each of them resolves.
package doclinks

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Link is one link or section reference of a Markdown file.
type Link struct {
	Line int    // 1-based
	Dest string // as written: path[#anchor], or #anchor
	// Section is set for a prose reference (`placement.md, "Misplaced
	// pods"`): the heading's text, which Dest's file must have.
	Section string
}

var (
	fenceRE   = regexp.MustCompile("^\\s*(```+|~~~+)")
	headingRE = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$`)
	anchorRE  = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	// An inline link or image: [text](dest "title"), dest maybe in <>.
	inlineRE = regexp.MustCompile(`!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(<[^>]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+"[^"]*")?\s*\)`)
	refDefRE = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(\S+)`)
	// A prose reference to a section: README, "Uninstall" or placement.md "Misplaced pods".
	sectionRefRE = regexp.MustCompile(`\b(README(?:\.md)?|[\w./-]+\.md),?\s+"([^"]+)"`)
)

// File is what the links of one Markdown file need: its anchors and links.
type File struct {
	Anchors  map[string]bool
	Headings []string // the headings' rendered text, in order
	Links    []Link
}

// Parse reads Markdown text: the headings' anchors (GitHub's slugs, with
// duplicates numbered), <a name> and <a id> anchors, and the links and
// section references outside code blocks and code spans.
func Parse(text string) File {
	f := File{Anchors: map[string]bool{}}
	seen := map[string]int{}
	var (
		fence     string // the open fence's marker, "" outside a block
		paragraph []string
		lines     []int // the line of each of paragraph's lines
	)
	flush := func() {
		// Section references may wrap: read them per paragraph, and report
		// the line each starts on.
		if len(paragraph) == 0 {
			return
		}
		joined := strings.Join(paragraph, " ")
		for _, m := range sectionRefRE.FindAllStringSubmatchIndex(stripCode(joined), -1) {
			line, off := lines[0], 0
			for k, p := range paragraph {
				if m[0] < off+len(p)+1 {
					line = lines[k]
					break
				}
				off += len(p) + 1
			}
			f.Links = append(f.Links, Link{Line: line, Dest: joined[m[2]:m[3]], Section: joined[m[4]:m[5]]})
		}
		paragraph, lines = nil, nil
	}
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		if fence != "" {
			// Only a run of the opening character, at least as long, closes it.
			t := strings.TrimSpace(line)
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			flush()
			fence = m[1]
			continue
		}
		for _, m := range anchorRE.FindAllStringSubmatch(line, -1) {
			f.Anchors[m[1]] = true
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			flush()
			text := RenderedText(m[2])
			f.Headings = append(f.Headings, text)
			slug := Slug(text)
			if k := seen[slug]; k > 0 {
				f.Anchors[fmt.Sprintf("%s-%d", slug, k)] = true
			} else {
				f.Anchors[slug] = true
			}
			seen[slug]++
		}
		plain := stripCode(line)
		for _, m := range inlineRE.FindAllStringSubmatch(plain, -1) {
			f.Links = append(f.Links, Link{Line: n, Dest: strings.Trim(m[2], "<>")})
		}
		if m := refDefRE.FindStringSubmatch(plain); m != nil {
			f.Links = append(f.Links, Link{Line: n, Dest: strings.Trim(m[1], "<>")})
		}
		if strings.TrimSpace(line) == "" || headingRE.MatchString(line) {
			flush()
			continue
		}
		paragraph = append(paragraph, strings.TrimSpace(line))
		lines = append(lines, n)
	}
	flush()
	return f
}

// stripCode blanks code spans, whose brackets and quotes are not links: a
// run of backticks up to the next run of the same length (an unmatched run
// is literal text).
func stripCode(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		j := i
		for j < len(b) && b[j] == '`' {
			j++
		}
		open := j - i
		end := -1
		for k := j; k < len(b); {
			if b[k] != '`' {
				k++
				continue
			}
			l := k
			for l < len(b) && b[l] == '`' {
				l++
			}
			if l-k == open {
				end = l
				break
			}
			k = l
		}
		if end < 0 {
			i = j
			continue
		}
		for k := i; k < end; k++ {
			b[k] = ' '
		}
		i = end
	}
	return string(b)
}

var (
	linkTextRE = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTagRE  = regexp.MustCompile(`<[^>]+>`)
)

// RenderedText is a heading's text as GitHub shows it: links reduced to their
// text, code spans to their content, emphasis markers and HTML tags dropped.
func RenderedText(s string) string {
	s = linkTextRE.ReplaceAllString(s, "$1")
	s = htmlTagRE.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "`", "")
	s = strings.ReplaceAll(s, "**", "")
	s = strings.ReplaceAll(s, "*", "")
	return strings.TrimSpace(s)
}

// Slug is the anchor GitHub gives a heading's rendered text: lower case,
// every character but letters, digits, spaces, '-' and '_' dropped, spaces
// turned into '-'. (Duplicates are numbered by Parse.)
func Slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// External reports whether a link leaves the repository (a URL scheme).
func External(dest string) bool {
	return regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`).MatchString(dest)
}

// Resolve returns the file a link of the Markdown file at path (relative
// to root) points to, relative to root, and its anchor. A section
// reference's bare file name ("README", "placement.md") is looked up beside
// the file, at the root and in docs/.
func Resolve(root, path string, l Link) (target, anchor string) {
	dest, anchor, _ := strings.Cut(l.Dest, "#")
	if dest == "" {
		return path, anchor
	}
	if l.Section != "" {
		if !strings.HasSuffix(dest, ".md") {
			dest += ".md"
		}
		for _, cand := range []string{filepath.Join(filepath.Dir(path), dest), dest, filepath.Join("docs", dest)} {
			if _, err := os.Stat(filepath.Join(root, cand)); err == nil {
				return filepath.ToSlash(filepath.Clean(cand)), ""
			}
		}
		return filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(path), dest))), ""
	}
	if strings.HasPrefix(dest, "/") {
		return filepath.ToSlash(filepath.Clean(strings.TrimPrefix(dest, "/"))), anchor
	}
	return filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(path), dest))), anchor
}

// HasSection reports whether one of headings is the section a prose
// reference names: the same text (case aside), or that text followed by a
// colon or a parenthesis ("Configure" for "Configure: ArchFilterArgs").
func HasSection(headings []string, section string) bool {
	want := strings.ToLower(RenderedText(section))
	for _, h := range headings {
		h = strings.ToLower(h)
		if h == want || strings.HasPrefix(h, want+":") || strings.HasPrefix(h, want+" (") {
			return true
		}
	}
	return false
}
