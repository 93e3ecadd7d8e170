package credentials

import (
	"bytes"
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
)

// marker is in every malformed secret's data: it must never be printed.
const marker = "MARKER-s3cr3t-7f1c"

// malformedSecrets are pull secrets whose data is unusable, each with marker
// in it, and the problem each must be reported with.
func malformedSecrets() ([]runtime.Object, []string) {
	badJSON := pullSecret("default", "bad-json", nil)
	badJSON.Data[v1.DockerConfigJsonKey] = []byte(`{"auths":{"r.example.com":{"password":"` + marker + `"}`)
	badBase64 := pullSecret("default", "bad-base64", nil)
	badBase64.Data[v1.DockerConfigJsonKey] = []byte(`{"auths":{"r.example.com":{"auth":"` + marker + `!!"}}}`)
	notUserPass := pullSecret("default", "not-user-pass", nil)
	notUserPass.Data[v1.DockerConfigJsonKey] = []byte(`{"auths":{"r.example.com":{"auth":"` + base64.StdEncoding.EncodeToString([]byte(marker)) + `"}}}`)
	wrongType := pullSecret("default", "wrong-type", nil)
	wrongType.Data[v1.DockerConfigJsonKey] = []byte(`{"auths":{"r.example.com":"` + marker + `"}}`)
	missingKey := pullSecret("default", "missing-key", nil)
	missingKey.Data = map[string][]byte{"config.json": []byte(marker)}
	badDockercfg := dockercfgSecret("default", "bad-dockercfg", "r.example.com", "u", "p")
	badDockercfg.Data[v1.DockerConfigKey] = []byte(marker)
	return []runtime.Object{badJSON, badBase64, notUserPass, wrongType, missingKey, badDockercfg}, []string{
		"secret default/bad-json: .dockerconfigjson is not valid docker config JSON: not JSON (syntax error at byte 59)",
		"secret default/bad-base64: .dockerconfigjson is not valid docker config JSON: an entry's auth is not base64 of user:password",
		"secret default/not-user-pass: .dockerconfigjson is not valid docker config JSON: an entry's auth is not base64 of user:password",
		"secret default/wrong-type: .dockerconfigjson is not valid docker config JSON: a value has the wrong JSON type",
		"secret default/missing-key has no .dockerconfigjson",
		"secret default/bad-dockercfg: .dockercfg is not valid docker config JSON: not JSON (syntax error at byte 1)",
	}
}

// captureKlog sends klog's output, at verbosity v, to the returned buffer
// until the test ends.
func captureKlog(t *testing.T, v string) *bytes.Buffer {
	t.Helper()
	var fs flag.FlagSet
	klog.InitFlags(&fs)
	var buf bytes.Buffer
	for name, value := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL", "v": v} {
		if err := fs.Set(name, value); err != nil {
			t.Fatal(err)
		}
	}
	klog.SetOutput(&buf)
	t.Cleanup(func() {
		klog.Flush()
		_ = fs.Set("logtostderr", "true")
		_ = fs.Set("v", "0")
		klog.SetOutput(nil)
	})
	return &buf
}

// TestMalformedPullSecrets: a pull secret with malformed data (invalid JSON,
// an auth that is not base64 of user:password, a value of the wrong type, a
// missing key) is skipped and reported with its namespace/name and reason, in
// the pod's Problems and in the log; the pod's other secrets still work; and
// the secret's content never appears in either, nor in how the credentials
// print. Both kinds of Store: the informers' (scheduler, placement) and the
// kubectl plugin's (GETs).
func TestMalformedPullSecrets(t *testing.T) {
	bad, wantProblems := malformedSecrets()
	good := pullSecret("default", "good", map[string]string{"r.example.com": "good-user:good-password"})
	objs := append(bad, good, serviceAccount("default", "default"))
	var names []string
	for _, o := range bad {
		names = append(names, o.(*v1.Secret).Name)
	}
	pod := podWith("default", append(names, "good")...)
	for _, tc := range []struct {
		name  string
		v     string
		store func(t *testing.T) *Store
	}{
		{name: "informers", v: "0", store: func(t *testing.T) *Store {
			s, _ := startStore(t, Options{}, objs...)
			return s
		}},
		{name: "kubectl plugin", v: "2", store: func(t *testing.T) *Store {
			s, err := NewClientStore(context.Background(), fake.NewClientset(objs...), Options{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := captureKlog(t, tc.v)
			s := tc.store(t)
			var printed []string
			for range 2 { // the second time from the parse cache: logged once
				pc := s.ForPod(pod).(*PodCredentials)
				if diff := cmp.Diff([]string{"pod imagePullSecret default/good → good-user"}, summary(pc.For("r.example.com"))); diff != "" {
					t.Errorf("credentials (-want,+got):\n%s", diff)
				}
				if diff := cmp.Diff(wantProblems, pc.Problems()); diff != "" {
					t.Errorf("Problems() (-want,+got):\n%s", diff)
				}
				printed = append(printed, fmt.Sprint(pc), fmt.Sprintf("%#v", pc), fmt.Sprintf("%+v", pc.For("r.example.com")))
				printed = append(printed, pc.Problems()...)
			}
			klog.Flush()
			log := logs.String()
			for _, name := range names {
				if n := strings.Count(log, `secret="default/`+name+`"`); n != 1 {
					t.Errorf("default/%s logged %d times, want once:\n%s", name, n, log)
				}
			}
			for _, out := range append(printed, log) {
				// As text, as base64 and as Go prints a []byte: [77 65 ...].
				leaked := strings.Contains(out, marker) || strings.Contains(out, base64.StdEncoding.EncodeToString([]byte(marker))) ||
					strings.Contains(out, strings.Trim(fmt.Sprint([]byte(marker)), "[]"))
				if leaked {
					t.Errorf("a malformed secret's content is printed:\n%s", out)
				}
			}
		})
	}
}
