package vulncheck

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// WriteReport prints each flavour's scan (database, toolchain, counts), then
// every reachable finding with its verdict, the allow-list's expired and
// unmatched entries, and what to do about a failure.
func WriteReport(w io.Writer, results map[string]*Result, v Verdict) error {
	flavours := make([]string, 0, len(results))
	for f := range results {
		flavours = append(flavours, f)
	}
	sort.Strings(flavours)
	var b strings.Builder
	for _, f := range flavours {
		r := results[f]
		fmt.Fprintf(&b, "govulncheck %s: %s, database %s (modified %s), %s: %d reachable, %d more in imported packages, %d more in required modules (not called)\n",
			f, r.Scanner, r.DB, r.DBModified.UTC().Format("2006-01-02T15:04:05Z"), r.GoVersion,
			len(r.Reachable), r.Imported, r.Required)
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FLAVOUR\tID\tMODULE\tFOUND\tFIXED\tVERDICT")
	row := func(j Judged, verdict string) {
		fixed := j.Finding.FixedIn
		if fixed == "" {
			fixed = "none"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", j.Flavour, j.Finding.ID, j.Finding.Module, j.Finding.FoundIn, fixed, verdict)
	}
	for _, j := range v.Allowed {
		row(j, "allowed until "+j.Entry.Expires)
	}
	for _, j := range v.Unexplained {
		verdict := "NOT IN THE ALLOW-LIST"
		if j.Entry != nil {
			verdict = "ALLOW-LIST ENTRY EXPIRED " + j.Entry.Expires
		}
		row(j, verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, j := range v.Unexplained {
		if j.Entry == nil {
			fmt.Fprintf(&b, "%s (%s): %s\n  %s is called from %s (%d calls deep)\n",
				j.Finding.ID, j.Flavour, j.Finding.Summary, j.Finding.Symbol, j.Finding.Entry, j.Finding.Depth)
		}
	}
	for _, e := range v.Expired {
		fmt.Fprintf(&b, "allow-list entry %s expired on %s (%s): fix it or explain it anew\n", e.ID, e.Expires, e.Reason)
	}
	for _, e := range v.Unmatched {
		fmt.Fprintf(&b, "allow-list entry %s matches no reachable finding any more: remove it\n", e.ID)
	}
	if v.Failed() {
		fmt.Fprintln(&b, "vulnerabilities: FAILED: upgrade the module (or the Go toolchain), or add an entry with a reason and an expiry date to the allow-list")
	} else {
		fmt.Fprintln(&b, "vulnerabilities: every reachable finding is explained by the allow-list")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
