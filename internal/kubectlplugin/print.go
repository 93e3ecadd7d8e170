package kubectlplugin

import (
	"encoding/json"
	"io"
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
		v.Platforms = append(v.Platforms, platformView{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant, OSVersion: p.OSVersion, OSFeatures: p.OSFeatures})
	}
	return v
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
