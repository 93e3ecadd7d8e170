package main

import (
	"os"
	"regexp"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The Dockerfile stays for Docker users: its image must carry the labels, user
// and entrypoint that `make image` gives (hack/image/image.sh, internal/ociimage).
func TestDockerfileMatchesImageScript(t *testing.T) {
	docker := read(t, "../../Dockerfile")
	script := read(t, "image.sh")
	labelKeys := func(re *regexp.Regexp, s string) []string {
		var keys []string
		for _, m := range re.FindAllStringSubmatch(s, -1) {
			keys = append(keys, m[1])
		}
		sort.Strings(keys)
		return keys
	}
	dockerLabels := labelKeys(regexp.MustCompile(`(?m)^(?:LABEL|\s+)\s*((?:org\.opencontainers|io\.archfilter)\.[a-z.]+)=`), docker)
	scriptLabels := labelKeys(regexp.MustCompile(`--label "((?:org\.opencontainers|io\.archfilter)\.[a-z.]+)=`), script)
	if len(scriptLabels) == 0 {
		t.Fatal("no labels found in image.sh")
	}
	if diff := cmp.Diff(scriptLabels, dockerLabels); diff != "" {
		t.Errorf("Dockerfile labels differ from make image's (-image.sh,+Dockerfile):\n%s", diff)
	}
	for _, want := range []string{`USER 65532:65532`, `ENTRYPOINT ["/usr/local/bin/archfilter-scheduler"]`} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(want) + `$`).MatchString(docker) {
			t.Errorf("Dockerfile lacks %q (make image: user 65532, that entrypoint)", want)
		}
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
