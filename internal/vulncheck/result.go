// Package vulncheck reads govulncheck's JSON output (-format json) and judges
// its reachable findings against a checked-in allow-list: every finding must
// be explained by an entry that has not expired. hack/vuln runs it in make
// verify, once per flavour.
package vulncheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"
)

// Result is what one govulncheck run reported.
type Result struct {
	// Scanner, DB, DBModified and GoVersion come from govulncheck's config message.
	Scanner    string
	DB         string
	DBModified time.Time
	GoVersion  string
	ScanLevel  string
	// Reachable are the vulnerabilities whose vulnerable symbols the code
	// calls (symbol level), one per OSV ID, sorted by ID.
	Reachable []Finding
	// Imported and Required count the vulnerabilities found only in imported
	// packages or required modules: not called, not judged.
	Imported, Required int
}

// Finding is one reachable vulnerability.
type Finding struct {
	ID      string // GO-YYYY-NNNN
	Summary string
	Module  string // "stdlib" for the standard library
	FoundIn string // the module's version in the graph (the toolchain's for stdlib)
	FixedIn string // empty when no fixed version is known
	// Symbol is the vulnerable function called, Entry the function of
	// archfilter's where one example call path starts, Depth its length.
	Symbol, Entry string
	Depth         int
}

// The subset of govulncheck's protocol (golang.org/x/vuln/internal/govulncheck,
// protocol v1.0.0) read here.
type message struct {
	Config *struct {
		ScannerName    string     `json:"scanner_name"`
		ScannerVersion string     `json:"scanner_version"`
		DB             string     `json:"db"`
		DBLastModified *time.Time `json:"db_last_modified"`
		GoVersion      string     `json:"go_version"`
		ScanLevel      string     `json:"scan_level"`
	} `json:"config"`
	OSV *struct {
		ID      string `json:"id"`
		Summary string `json:"summary"`
	} `json:"osv"`
	Finding *struct {
		OSV          string  `json:"osv"`
		FixedVersion string  `json:"fixed_version"`
		Trace        []frame `json:"trace"`
	} `json:"finding"`
}

type frame struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Package  string `json:"package"`
	Function string `json:"function"`
	Receiver string `json:"receiver"`
}

func (f frame) String() string {
	switch {
	case f.Function == "":
		return f.Package
	case f.Receiver != "":
		return fmt.Sprintf("%s.%s.%s", f.Package, f.Receiver, f.Function)
	default:
		return f.Package + "." + f.Function
	}
}

// Parse reads govulncheck's JSON stream. It refuses a scan that was not at
// symbol level: only then are reachable findings told apart.
func Parse(r io.Reader) (*Result, error) {
	res := &Result{}
	summaries := map[string]string{}
	level := map[string]int{} // OSV ID -> 1 required, 2 imported, 3 called
	reach := map[string]Finding{}
	sawConfig := false
	dec := json.NewDecoder(r)
	for {
		var m message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("reading govulncheck's JSON output: %w", err)
		}
		switch {
		case m.Config != nil:
			sawConfig = true
			c := m.Config
			res.Scanner = c.ScannerName + "@" + c.ScannerVersion
			res.DB, res.GoVersion, res.ScanLevel = c.DB, c.GoVersion, c.ScanLevel
			if c.DBLastModified != nil {
				res.DBModified = *c.DBLastModified
			}
		case m.OSV != nil:
			summaries[m.OSV.ID] = m.OSV.Summary
		case m.Finding != nil:
			f := m.Finding
			if len(f.Trace) == 0 {
				return nil, fmt.Errorf("govulncheck finding %s has no trace", f.OSV)
			}
			l := 1
			if f.Trace[0].Package != "" {
				l = 2
			}
			if f.Trace[0].Function != "" {
				l = 3
			}
			if l > level[f.OSV] {
				level[f.OSV] = l
			}
			if l == 3 {
				c := Finding{
					ID: f.OSV, Module: f.Trace[0].Module, FoundIn: f.Trace[0].Version,
					FixedIn: f.FixedVersion, Symbol: f.Trace[0].String(),
					Entry: f.Trace[len(f.Trace)-1].String(), Depth: len(f.Trace),
				}
				// govulncheck's order varies between runs: keep the shortest
				// example, the same one every time.
				if prev, seen := reach[f.OSV]; !seen || before(c, prev) {
					reach[f.OSV] = c
				}
			}
		}
	}
	if !sawConfig {
		return nil, fmt.Errorf("no govulncheck config message: not govulncheck -format json output")
	}
	if res.ScanLevel != "symbol" {
		return nil, fmt.Errorf("govulncheck scanned at %q level, want symbol (reachable findings)", res.ScanLevel)
	}
	for _, l := range level {
		switch l {
		case 1:
			res.Required++
		case 2:
			res.Imported++
		}
	}
	for id, f := range reach {
		f.Summary = summaries[id]
		res.Reachable = append(res.Reachable, f)
	}
	sort.Slice(res.Reachable, func(i, j int) bool { return res.Reachable[i].ID < res.Reachable[j].ID })
	return res, nil
}

// before orders examples of one vulnerability: shorter paths first.
func before(a, b Finding) bool {
	if a.Depth != b.Depth {
		return a.Depth < b.Depth
	}
	if a.Module != b.Module {
		return a.Module < b.Module
	}
	if a.Symbol != b.Symbol {
		return a.Symbol < b.Symbol
	}
	return a.Entry < b.Entry
}
