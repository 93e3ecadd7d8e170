package vulncheck

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"time"

	"sigs.k8s.io/yaml"
)

// Entry explains one vulnerability that archfilter knowingly ships with.
type Entry struct {
	// ID is the Go vulnerability database's ID, GO-YYYY-NNNN.
	ID string `json:"id"`
	// Reason says why it is accepted and what ends it (a release to move to).
	Reason string `json:"reason"`
	// Expires (YYYY-MM-DD) is the last day the entry counts; after it the
	// finding must be fixed or explained anew.
	Expires string `json:"expires"`
	// Flavours it applies to (main, k8s1.35); empty for every flavour.
	Flavours []string `json:"flavours,omitempty"`

	expires time.Time
}

var idPattern = regexp.MustCompile(`^GO-[0-9]{4}-[0-9]{4,}$`)

// LoadAllowList reads and validates the allow-list at path: a YAML list of
// entries, each with an ID, a reason and an expiry date, no ID twice.
func LoadAllowList(path string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("allow-list: %w", err)
	}
	var entries []Entry
	if err := yaml.UnmarshalStrict(data, &entries); err != nil {
		return nil, fmt.Errorf("allow-list %s: %w", path, err)
	}
	seen := map[string]bool{}
	for i := range entries {
		e := &entries[i]
		where := fmt.Sprintf("allow-list %s: entry %d (%s)", path, i+1, e.ID)
		if !idPattern.MatchString(e.ID) {
			return nil, fmt.Errorf("%s: id %q is not a Go vulnerability ID (GO-YYYY-NNNN)", where, e.ID)
		}
		if seen[e.ID] {
			return nil, fmt.Errorf("%s: %s is listed twice", where, e.ID)
		}
		seen[e.ID] = true
		if e.Reason == "" {
			return nil, fmt.Errorf("%s: no reason", where)
		}
		if e.expires, err = time.Parse(time.DateOnly, e.Expires); err != nil {
			return nil, fmt.Errorf("%s: expires %q is not a date (YYYY-MM-DD)", where, e.Expires)
		}
	}
	return entries, nil
}

// Judged is a finding of one flavour and the entry that explains it, if any.
type Judged struct {
	Flavour string
	Finding Finding
	Entry   *Entry
}

// Verdict is the allow-list applied to every flavour's findings.
type Verdict struct {
	// Unexplained findings have no entry (for their flavour), or one that
	// has expired (Entry set): they fail.
	Unexplained []Judged
	// Allowed findings have an entry that has not expired.
	Allowed []Judged
	// Expired entries are past their date, whether they still match or not: they fail.
	Expired []Entry
	// Unmatched entries match no finding of their flavours: reported, to be removed.
	Unmatched []Entry
}

// Failed is true when a finding is unexplained or an entry has expired.
func (v Verdict) Failed() bool { return len(v.Unexplained) > 0 || len(v.Expired) > 0 }

// Judge applies the allow-list to each flavour's result (keyed by flavour).
// An entry counts through the day of its expiry date (UTC); today is that
// day's date.
func Judge(results map[string]*Result, allow []Entry, today time.Time) Verdict {
	var v Verdict
	day := time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, time.UTC)
	matched := make([]bool, len(allow))
	flavours := make([]string, 0, len(results))
	for f := range results {
		flavours = append(flavours, f)
	}
	sort.Strings(flavours)
	for _, flavour := range flavours {
		for _, f := range results[flavour].Reachable {
			j := Judged{Flavour: flavour, Finding: f}
			for i := range allow {
				e := &allow[i]
				if e.ID == f.ID && (len(e.Flavours) == 0 || slices.Contains(e.Flavours, flavour)) {
					j.Entry, matched[i] = e, true
					break
				}
			}
			// A finding whose entry has expired is unexplained again.
			if j.Entry == nil || j.Entry.expires.Before(day) {
				v.Unexplained = append(v.Unexplained, j)
			} else {
				v.Allowed = append(v.Allowed, j)
			}
		}
	}
	for i, e := range allow {
		if e.expires.Before(day) {
			v.Expired = append(v.Expired, e)
		} else if !matched[i] {
			v.Unmatched = append(v.Unmatched, e)
		}
	}
	return v
}
