// Command sbom normalises a CycloneDX SBOM written by cyclonedx-gomod so that
// it depends only on what it describes: the generator's own binary hashes
// (which change with the Go toolchain that built it) are dropped, and for an
// SBOM of the module graph (-unversioned) so is the main module's version
// (read from git tags, so it changes with every release). Keys are written
// sorted, two-space indented. hack/sbom/sbom.sh runs it.
//
//	go run ./hack/sbom [-unversioned] IN OUT
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	fs := flag.NewFlagSet("sbom", flag.ExitOnError)
	unversioned := fs.Bool("unversioned", false, "drop the main module's version (an SBOM of the module graph)")
	_ = fs.Parse(os.Args[1:])
	if fs.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: sbom [-unversioned] IN OUT")
		os.Exit(2)
	}
	in, err := os.ReadFile(fs.Arg(0))
	if err == nil {
		var out []byte
		if out, err = normalise(in, *unversioned); err == nil {
			err = os.WriteFile(fs.Arg(1), out, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sbom: %s: %v\n", fs.Arg(0), err)
		os.Exit(1)
	}
}

func normalise(in []byte, unversioned bool) ([]byte, error) {
	var bom map[string]any
	if err := json.Unmarshal(in, &bom); err != nil {
		return nil, err
	}
	if bom["bomFormat"] != "CycloneDX" {
		return nil, fmt.Errorf("not a CycloneDX SBOM (bomFormat %v)", bom["bomFormat"])
	}
	md, _ := bom["metadata"].(map[string]any)
	if tools, ok := md["tools"].([]any); ok {
		for _, t := range tools {
			if t, ok := t.(map[string]any); ok {
				delete(t, "hashes")
			}
		}
	}
	var out any = bom
	if c, ok := md["component"].(map[string]any); ok && unversioned {
		if v, ok := c["version"].(string); ok && v != "" {
			delete(c, "version")
			// The version is also in the main module's package URL and every
			// reference to it: pkg:golang/MODULE@VERSION?... .
			name, _ := c["name"].(string)
			out = replaceStrings(bom, "pkg:golang/"+name+"@"+v, "pkg:golang/"+name)
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// replaceStrings replaces old with new in every string value of v.
func replaceStrings(v any, old, new string) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = replaceStrings(e, old, new)
		}
	case []any:
		for i, e := range v {
			v[i] = replaceStrings(e, old, new)
		}
	case string:
		return strings.ReplaceAll(v, old, new)
	}
	return v
}
