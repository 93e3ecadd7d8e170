package argsfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/archfilter/archfilter/apis/config"
	configv1 "github.com/archfilter/archfilter/apis/config/v1"
	"github.com/archfilter/archfilter/internal/fuzzcheck"
)

// argsSeeds are ArchFilterArgs documents of real shapes: the defaults, the args of
// scheme_test.go's configurations (TestDecodeDefaults, TestDecodeErrors) and of
// validation_test.go's "every optional field valid", in YAML and JSON.
var argsSeeds = []string{
	header,
	header + "excludedNamespaces: []\n",
	header + "cache: {tagTTL: 1m}\n",
	header + "policies: {enabled: false, allowedOverrides: []}\n",
	header + "policies: {allowedOverrides: [preferredPlatforms, optOut]}\n",
	header + "failurPolicy: Fail\n",
	header + "cache: {maxEntry: 10}\n",
	header + "workers: many\n",
	header + "maxWait: soon\n",
	header + "failurePolicy: Ignore\nmaxWait: 30s\nexcludedNamespaces: [kube-system, kube-public, kube-node-lease]\nsecretNamespaces: [kube-system]\n",
	header + `failurePolicy: Fail
fallbackPlatforms: [linux/amd64, linux/arm/v7, linux/riscv64]
run32BitImagesOn: [amd64, arm64]
registries:
- {host: "registry.example.com:5000", mirrors: ["mirror.local:5000", "[::1]:5000"]}
- {host: 10.0.0.1, insecure: true}
- host: "[fd00::1]:443"
allowedRegistries: ["*.example.com", docker.io]
deniedRegistries: [169.254.169.254]
globalPullSecret: {namespace: kube-system, name: pull.secret}
credentialProviderConfig: /etc/cp.yaml
credentialProviderBinDir: /usr/libexec/cp
namespaceSelector: {matchLabels: {a: b}}
preferredPlatforms: [{platform: linux/arm64, weight: 100}, {platform: linux/amd64, weight: 1}]
daemonSetPolicy: Enforce
`,
	header + "policies: {allowedOverrides: [failurePolicy, nodeSelector, failurePolicy]}\nfallbackPlatforms: [linux, linux/amd64, linux/x86_64]\nworkers: 0\n",
	`{"apiVersion":"kubescheduler.config.k8s.io/v1","kind":"ArchFilterArgs","maxWait":"1m","cache":{"staleWhileRevalidate":"0s"},"archTaintToleration":true}`,
	`{"apiVersion":"kubescheduler.config.k8s.io/v1","kind":"KubeSchedulerConfiguration"}`,
}

// encodeArgs writes args as a v1 document of mediaType (YAML or JSON), as this
// package's scheme encodes them.
func encodeArgs(t *testing.T, args *config.ArchFilterArgs, mediaType string) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		t.Fatalf("no serializer for %s", mediaType)
	}
	out, err := runtime.Encode(codecs.EncoderForVersion(info.Serializer, configv1.SchemeGroupVersion), args)
	if err != nil {
		t.Fatalf("encoding args that validated as %s: %v", mediaType, err)
	}
	return out
}

// FuzzArgs reads arbitrary bytes as the --args file of the placement mode and kubectl
// archfilter (Parse). Besides "no panic":
//   - one input allocates at most 512 bytes per input byte plus 4 MiB (YAML to JSON,
//     strict decoding, conversion, defaulting, validation), within fuzzcheck.DefaultTime;
//   - an error names the flag and the file; a validation error is an aggregate of
//     field errors whose paths are under "args";
//   - round trip: args that decode and validate, encoded as a v1 document (YAML and
//     JSON), parse back to the same args. An empty list and an unset one are the same
//     (an explicit "fallbackPlatforms: []" reads back unset, and means the same),
//     except where the defaults tell them apart: excludedNamespaces and
//     policies.allowedOverrides are never unset once defaulted, so an explicit []
//     must read back [], not the defaults.
func FuzzArgs(f *testing.F) {
	for _, s := range argsSeeds {
		f.Add([]byte(s))
	}
	// The ArchFilterArgs files kustomize deploys.
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "manifests", "components", "*", "args.yaml"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var (
			args *config.ArchFilterArgs
			err  error
		)
		fuzzcheck.Within(t, "parsing ArchFilterArgs", fuzzcheck.Limits{Alloc: fuzzcheck.PerInputByte(data, 512, 4*fuzzcheck.MiB)}, func() {
			args, err = Parse("--args", "args.yaml", data, nil)
		})
		if err != nil {
			if args != nil {
				t.Errorf("Parse returned args and an error: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "--args args.yaml: ") {
				t.Errorf("error %q does not name the flag and the file", err)
			}
			var agg utilerrors.Aggregate
			if errors.As(err, &agg) {
				for _, e := range agg.Errors() {
					var fe *field.Error
					if !errors.As(e, &fe) {
						t.Errorf("validation error %q is %T, want a *field.Error", e, e)
						continue
					}
					if fe.Field != "args" && !strings.HasPrefix(fe.Field, "args.") && !strings.HasPrefix(fe.Field, "args[") {
						t.Errorf("validation error %q: field %q is not under args", fe, fe.Field)
					}
				}
			}
			return
		}
		for _, mediaType := range []string{runtime.ContentTypeYAML, runtime.ContentTypeJSON} {
			doc := encodeArgs(t, args, mediaType)
			again, err := Parse("--args", "args.yaml", doc, nil)
			if err != nil {
				t.Fatalf("args that validated, encoded as %s:\n%s\ndo not parse: %v", mediaType, doc, err)
			}
			if diff := cmp.Diff(args, again, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("round trip through %s:\n%s\n(-parsed,+again):\n%s", mediaType, doc, diff)
			}
		}
	})
}

// TestParseLargeArgs: a file of many invalid or unknown entries is refused in time and
// memory linear in its size, which FuzzArgs' small inputs cannot show at scale. 20 000
// duplicate fallbackPlatforms took 42 s and 25 GB while the validation error listed
// every one (validation.MaxErrors).
func TestParseLargeArgs(t *testing.T) {
	list := func(field, item string) []byte {
		return []byte(header + field + ": [" + strings.Repeat(item+",", 20000) + item + "]\n")
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"duplicate fallback platforms", list("fallbackPlatforms", "linux/amd64")},
		{"invalid excluded namespaces", list("excludedNamespaces", "Not_A_Namespace")},
		{"invalid preferences", list("preferredPlatforms", "{platform: x, weight: 0}")},
		{"unknown fields", []byte(header + strings.Repeat("unknownField: 1\n", 1) + func() string {
			var b strings.Builder
			for i := range 20000 {
				b.WriteString("f" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("y", i/26%50) + ": 1\n")
			}
			return b.String()
		}())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			// Wall time on a loaded machine: far above the linear cost, far below the
			// quadratic one.
			limits := fuzzcheck.Limits{Alloc: fuzzcheck.PerInputByte(tc.data, 512, 4*fuzzcheck.MiB), Time: 20 * time.Second}
			fuzzcheck.Within(t, "parsing large ArchFilterArgs", limits, func() {
				_, err = Parse("--args", "args.yaml", tc.data, nil)
				if err != nil {
					_ = err.Error()
				}
			})
			if err == nil {
				t.Fatal("no error")
			}
		})
	}
}
