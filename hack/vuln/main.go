// Command vuln judges govulncheck's findings against the allow-list: it reads
// each flavour's `govulncheck -format json` output and fails when a reachable
// vulnerability is not explained by an unexpired entry of the allow-list
// (internal/vulncheck). hack/vuln/check.sh runs govulncheck and then this, in
// make verify.
//
//	go run ./hack/vuln -allowlist hack/vuln/allowlist.yaml main=main.json k8s1.35=k8s135.json
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/archfilter/archfilter/internal/vulncheck"
)

func main() {
	ok, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "vuln:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

func run(args []string) (bool, error) {
	fs := flag.NewFlagSet("vuln", flag.ContinueOnError)
	allowPath := fs.String("allowlist", "hack/vuln/allowlist.yaml", "the allow-list (YAML: id, reason, expires, flavours)")
	today := fs.String("today", time.Now().UTC().Format(time.DateOnly), "the date entries expire against (YYYY-MM-DD)")
	if err := fs.Parse(args); err != nil {
		return false, err
	}
	day, err := time.Parse(time.DateOnly, *today)
	if err != nil {
		return false, fmt.Errorf("-today %q: %w", *today, err)
	}
	if fs.NArg() == 0 {
		return false, fmt.Errorf("no FLAVOUR=FILE of govulncheck -format json output given")
	}
	results := map[string]*vulncheck.Result{}
	for _, a := range fs.Args() {
		flavour, path, ok := strings.Cut(a, "=")
		if !ok || flavour == "" || path == "" {
			return false, fmt.Errorf("%q: want FLAVOUR=FILE", a)
		}
		f, err := os.Open(path)
		if err != nil {
			return false, err
		}
		r, err := vulncheck.Parse(f)
		f.Close()
		if err != nil {
			return false, fmt.Errorf("%s: %w", path, err)
		}
		results[flavour] = r
	}
	allow, err := vulncheck.LoadAllowList(*allowPath)
	if err != nil {
		return false, err
	}
	for _, e := range allow {
		for _, f := range e.Flavours {
			if results[f] == nil {
				return false, fmt.Errorf("allow-list %s: entry %s names flavour %q, not one of those scanned", *allowPath, e.ID, f)
			}
		}
	}
	v := vulncheck.Judge(results, allow, day)
	if err := vulncheck.WriteReport(os.Stdout, results, v); err != nil {
		return false, err
	}
	return !v.Failed(), nil
}
