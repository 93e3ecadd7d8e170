package scheme

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	schedconfigv1 "k8s.io/kubernetes/pkg/scheduler/apis/config/v1"

	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/archfilter/archfilter/apis/config"
	"github.com/archfilter/archfilter/apis/config/validation"
	"github.com/archfilter/archfilter/internal/fuzzcheck"
)

// loadConfig decodes a kube-scheduler --config file as kube-scheduler does
// (options.LoadConfigFromFile, without the file).
func loadConfig(data []byte) (*schedconfig.KubeSchedulerConfiguration, error) {
	obj, gvk, err := kubeschedulerscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("got %s, want a KubeSchedulerConfiguration", gvk)
	}
	cfg.TypeMeta.APIVersion = gvk.GroupVersion().String()
	return cfg, nil
}

// encodeConfig writes cfg as kube-scheduler writes --write-config-to and logs the
// configuration it runs with (options.encodeConfig): YAML, v1.
func encodeConfig(cfg *schedconfig.KubeSchedulerConfiguration) ([]byte, error) {
	info, ok := runtime.SerializerInfoForMediaType(kubeschedulerscheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeYAML)
	if !ok {
		return nil, errors.New("no YAML serializer")
	}
	var buf bytes.Buffer
	err := kubeschedulerscheme.Codecs.EncoderForVersion(info.Serializer, schedconfigv1.SchemeGroupVersion).Encode(cfg, &buf)
	return buf.Bytes(), err
}

// argsPath is the path of the args of profile i's pluginConfig entry j.
func argsPath(i, j int) *field.Path {
	return field.NewPath("profiles").Index(i).Child("pluginConfig").Index(j).Child("args")
}

// archFilterArgsOf are the ArchFilter args of each profile, by profile and pluginConfig
// index ("profiles[0].pluginConfig[1].args").
func archFilterArgsOf(t *testing.T, cfg *schedconfig.KubeSchedulerConfiguration) map[string]*config.ArchFilterArgs {
	t.Helper()
	out := map[string]*config.ArchFilterArgs{}
	for i, p := range cfg.Profiles {
		for j, pc := range p.PluginConfig {
			if pc.Name != "ArchFilter" {
				continue
			}
			args, ok := pc.Args.(*config.ArchFilterArgs)
			if !ok {
				t.Fatalf("profiles[%d].pluginConfig[%d]: ArchFilter args decoded as %T, want *config.ArchFilterArgs", i, j, pc.Args)
			}
			out[argsPath(i, j).String()] = args
		}
	}
	return out
}

// FuzzSchemeConfig reads arbitrary bytes as kube-scheduler's --config file, with
// ArchFilterArgs registered on its scheme. Besides "no panic":
//   - one input allocates at most 512 bytes per input byte plus 16 MiB (kube-scheduler
//     defaults every profile's plugins and their args), within fuzzcheck.DefaultTime;
//   - every ArchFilter pluginConfig entry decodes as *config.ArchFilterArgs;
//   - validating them as the plugin does yields field errors under the entry's path;
//   - round trip: a configuration whose ArchFilter args validate, written as
//     kube-scheduler writes --write-config-to and logs it, decodes to the same args
//     (an empty list and an unset one the same, as in FuzzArgs: where the defaults
//     tell them apart, the defaulted field is never unset).
func FuzzSchemeConfig(f *testing.F) {
	f.Add([]byte(header))
	for _, args := range []string{
		"      {}\n",
		"      excludedNamespaces: []\n",
		"      cache: {tagTTL: 1m}\n",
		"      policies: {enabled: false, allowedOverrides: []}\n",
		"      policies: {allowedOverrides: [preferredPlatforms, optOut]}\n",
		"      failurPolicy: Fail\n",
		"      cache: {maxEntry: 10}\n",
		"      workers: many\n",
		"      maxWait: soon\n",
	} {
		f.Add([]byte(header + "  pluginConfig:\n  - name: ArchFilter\n    args:\n" + args))
	}
	// The configurations archfilter ships.
	root := filepath.Join("..", "..", "..", "manifests")
	files, _ := filepath.Glob(filepath.Join(root, "scheduler-config", "*.yaml"))
	files = append(files, filepath.Join(root, "base", "config.yaml"), filepath.Join(root, "components", "secret-namespaces", "config.yaml"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var (
			cfg *schedconfig.KubeSchedulerConfiguration
			err error
		)
		fuzzcheck.Within(t, "decoding a scheduler configuration", fuzzcheck.Limits{Alloc: fuzzcheck.PerInputByte(data, 512, 16*fuzzcheck.MiB)}, func() {
			cfg, err = loadConfig(data)
		})
		if err != nil {
			return
		}
		decoded := archFilterArgsOf(t, cfg)
		valid := true
		for i, p := range cfg.Profiles {
			for j, pc := range p.PluginConfig {
				args, ok := pc.Args.(*config.ArchFilterArgs)
				if !ok {
					continue
				}
				path := argsPath(i, j).String()
				err := validation.ValidateArchFilterArgs(argsPath(i, j), args)
				if err == nil {
					continue
				}
				valid = false
				var agg utilerrors.Aggregate
				if !errors.As(err, &agg) {
					t.Fatalf("%s: validation error %v is %T, want an aggregate", path, err, err)
				}
				for _, e := range agg.Errors() {
					var fe *field.Error
					if !errors.As(e, &fe) || !strings.HasPrefix(fe.Field, path) {
						t.Errorf("%s: validation error %q does not name a field under the args' path", path, e)
					}
				}
			}
		}
		if !valid {
			return
		}
		written, err := encodeConfig(cfg)
		if err != nil {
			t.Fatalf("a configuration that decoded does not encode: %v", err)
		}
		again, err := loadConfig(written)
		if err != nil {
			t.Fatalf("the configuration kube-scheduler writes:\n%s\ndoes not decode: %v", written, err)
		}
		if diff := cmp.Diff(decoded, archFilterArgsOf(t, again), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("ArchFilter args round trip through\n%s\n(-decoded,+again):\n%s", written, diff)
		}
	})
}
