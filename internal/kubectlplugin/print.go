package kubectlplugin

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"github.com/archfilter/archfilter/pkg/platform"
)

// platformView is one platform as printed in JSON and YAML.
type platformView struct {
	OS           string   `json:"os"`
	Architecture string   `json:"architecture"`
	Variant      string   `json:"variant,omitempty"`
	OSVersion    string   `json:"osVersion,omitempty"`
	OSFeatures   []string `json:"osFeatures,omitempty"`
}

// setView prints a platform.Set: any is true for an unconstrained set (OCI artifacts,
// data-only images), and an empty list with any false allows nothing.
type setView struct {
	Any       bool           `json:"any,omitempty"`
	Platforms []platformView `json:"platforms"`
}

func viewOf(s platform.Set) setView {
	if s.IsAny() {
		return setView{Any: true}
	}
	v := setView{Platforms: []platformView{}}
	for _, p := range s.Platforms() {
		v.Platforms = append(v.Platforms, platformViewOf(p))
	}
	return v
}

func platformViewOf(p platform.Platform) platformView {
	return platformView{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant, OSVersion: p.OSVersion, OSFeatures: p.OSFeatures}
}

// String is the set for a table cell, as setString writes it.
func (v setView) String() string {
	if v.Any {
		return "any"
	}
	var names []string
	for _, p := range v.Platforms {
		name := platform.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant}.String()
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// shortDigest is "sha256:" and the first 12 hex digits, as container tools abbreviate.
func shortDigest(d string) string {
	algo, hex, ok := strings.Cut(d, ":")
	if !ok || len(hex) <= 12 {
		return d
	}
	return algo + ":" + hex[:12]
}

// setString is a Set for a table cell: "*" reads "any" and the empty set "none".
func setString(s platform.Set) string {
	switch {
	case s.IsAny():
		return "any"
	case s.IsEmpty():
		return "none"
	}
	return s.String()
}

func writeStructured(w io.Writer, format outputFormat, v any) error {
	if format == outputYAML {
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}

// trimmedTable is a table whose rows may end in empty cells: every cell is
// tab-terminated, so that the columns line up, and flush writes the lines to w
// without the padding left at their ends.
type trimmedTable struct {
	*tabwriter.Writer
	buf strings.Builder
	w   io.Writer
}

func newTrimmedTable(w io.Writer) *trimmedTable {
	t := &trimmedTable{w: w}
	t.Writer = newTable(&t.buf)
	return t
}

// row writes one row of cells.
func (t *trimmedTable) row(cells ...string) {
	_, _ = io.WriteString(t.Writer, strings.Join(cells, "\t")+"\t\n")
}

func (t *trimmedTable) flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(t.buf.String(), "\n") {
		if line == "" {
			continue
		}
		if _, err := io.WriteString(t.w, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	return nil
}
