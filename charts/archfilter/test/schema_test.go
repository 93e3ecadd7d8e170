package charttest

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	configv1 "github.com/archfilter/archfilter/apis/config/v1"
)

// jsonSchema is the part of values.schema.json the tests walk.
type jsonSchema struct {
	Type                 any                    `json:"type"`
	Properties           map[string]*jsonSchema `json:"properties"`
	Items                *jsonSchema            `json:"items"`
	AdditionalProperties any                    `json:"additionalProperties"`
}

func loadSchema(t *testing.T) *jsonSchema {
	t.Helper()
	var s jsonSchema
	if err := json.Unmarshal(readFile(t, "charts/archfilter/values.schema.json"), &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

var durationType = reflect.TypeFor[metav1.Duration]()

// schemaType is the JSON schema type a Go field encodes as.
func schemaType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType, t.Kind() == reflect.String:
		return "string"
	case t.Kind() == reflect.Bool:
		return "boolean"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "integer"
	case t.Kind() == reflect.Slice:
		return "array"
	case t.Kind() == reflect.Struct, t.Kind() == reflect.Map:
		return "object"
	}
	return t.Kind().String()
}

// compareSchema reports every JSON field of the Go type t that the schema s
// lacks or types differently, and every property of s that t lacks.
func compareSchema(path string, t reflect.Type, s *jsonSchema) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var problems []string
	if got, want := s.Type, schemaType(t); got != want {
		return []string{path + ": schema type " + toString(got) + ", Go type " + t.String() + " encodes as " + want}
	}
	switch {
	case t == durationType:
		return nil
	case t.Kind() == reflect.Slice:
		if s.Items == nil {
			return []string{path + ": array without items"}
		}
		return compareSchema(path+"[]", t.Elem(), s.Items)
	case t.Kind() == reflect.Map:
		return nil
	case t.Kind() != reflect.Struct:
		return nil
	}
	if s.AdditionalProperties != false {
		problems = append(problems, path+": additionalProperties is not false: a misspelt field would pass")
	}
	seen := map[string]bool{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || f.Anonymous {
			continue // TypeMeta is inline
		}
		seen[name] = true
		prop, ok := s.Properties[name]
		if !ok {
			problems = append(problems, path+"."+name+": a field of "+t.String()+" missing from values.schema.json")
			continue
		}
		problems = append(problems, compareSchema(path+"."+name, f.Type, prop)...)
	}
	for name := range s.Properties {
		if !seen[name] {
			problems = append(problems, path+"."+name+": in values.schema.json but not a field of "+t.String())
		}
	}
	return problems
}

func toString(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestSchemaCoversArchFilterArgs: values.schema.json's archFilterArgs has
// exactly the JSON fields of apis/config/v1 ArchFilterArgs, nested ones
// included, with matching types, so the two cannot drift.
func TestSchemaCoversArchFilterArgs(t *testing.T) {
	s := loadSchema(t).Properties["archFilterArgs"]
	if s == nil {
		t.Fatal("values.schema.json has no archFilterArgs")
	}
	problems := compareSchema("archFilterArgs", reflect.TypeFor[configv1.ArchFilterArgs](), s)
	slices.Sort(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

// TestSchemaCoversValues: every value in values.yaml is described by the
// schema (and the top level refuses unknown values).
func TestSchemaCoversValues(t *testing.T) {
	var values map[string]any
	if err := yaml.Unmarshal(readFile(t, "charts/archfilter/values.yaml"), &values); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any, s *jsonSchema)
	walk = func(path string, v any, s *jsonSchema) {
		m, ok := v.(map[string]any)
		if !ok || s.Properties == nil {
			return
		}
		for k, sub := range m {
			prop, ok := s.Properties[k]
			if !ok {
				t.Errorf("%s.%s: in values.yaml, not in values.schema.json", path, k)
				continue
			}
			walk(path+"."+k, sub, prop)
		}
	}
	s := loadSchema(t)
	if s.AdditionalProperties != false {
		t.Error("the schema's top level accepts unknown values")
	}
	walk("", values, s)
}

// TestSchemaRejects: bad values fail before rendering, naming their path.
func TestSchemaRejects(t *testing.T) {
	for _, tc := range []struct {
		values string
		path   string
	}{
		{"archFilterArgs: {failurePolicy: Sometimes}", "/archFilterArgs/failurePolicy"},
		{"archFilterArgs: {workers: 0}", "/archFilterArgs/workers"},
		{"archFilterArgs: {workers: 2000}", "/archFilterArgs/workers"},
		{"archFilterArgs: {maxWait: 30 seconds}", "/archFilterArgs/maxWait"},
		{"archFilterArgs: {maxwait: 30s}", "maxwait"},
		{"archFilterArgs: {cache: {tagTTL: 5}}", "/archFilterArgs/cache/tagTTL"},
		{"archFilterArgs: {preferredPlatforms: [{platform: linux/arm64, weight: 101}]}", "/archFilterArgs/preferredPlatforms/0/weight"},
		{"archFilterArgs: {preferredPlatforms: [{platform: arm64, weight: 10}]}", "/archFilterArgs/preferredPlatforms/0/platform"},
		{"archFilterArgs: {registries: [{host: 'https://registry.example.com'}]}", "/archFilterArgs/registries/0/host"},
		{"archFilterArgs: {registries: [{insecure: true}]}", "/archFilterArgs/registries/0"},
		{"archFilterArgs: {globalPullSecret: {name: creds}}", "/archFilterArgs/globalPullSecret"},
		{"archFilterArgs: {run32BitImagesOn: ['386']}", "/archFilterArgs/run32BitImagesOn/0"},
		{"archFilterArgs: {daemonSetPolicy: skip}", "/archFilterArgs/daemonSetPolicy"},
		{"archFilterArgs: {excludedNamespaces: [Kube_System]}", "/archFilterArgs/excludedNamespaces/0"},
		{"archFilterArgs: {namespaceSelector: {matchExpressions: [{key: a, operator: Equals}]}}", "/archFilterArgs/namespaceSelector/matchExpressions/0/operator"},
		{"mode: primary", "/mode"},
		{"image: {flavour: k8s1.33}", "/image/flavour"},
		{"image: {digest: 'sha256:abc'}", "/image/digest"},
		{"replicas: 0", "/replicas"},
		{"replica: 3", "replica"},
		{"nodeSelector: {kubernetes.io/arch: amd64}", "/nodeSelector"},
		{"networkPolicy: {apiServer: {cidrs: [10.0.0.1]}}", "/networkPolicy/apiServer/cidrs/0"},
		{"leaderElection: {leaseDuration: 15}", "/leaderElection/leaseDuration"},
		{"extraArgs: [v=4]", "/extraArgs/0"},
	} {
		t.Run(tc.values, func(t *testing.T) {
			var values map[string]any
			if err := yaml.Unmarshal([]byte(tc.values), &values); err != nil {
				t.Fatal(err)
			}
			_, err := render(t, values, renderOpts{})
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), "schema") || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("error does not name %s as a schema violation:\n%v", tc.path, err)
			}
		})
	}
}
