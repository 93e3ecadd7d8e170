package kubectlplugin

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/decision"
)

// fixtures are the images the tests resolve, in one in-memory registry.
type fixtures struct {
	host                     string
	multi, amd, armv7, att   registrytest.Pushed
	chart                    registrytest.Pushed
	multiRef, amdRef, armRef string
}

func pushFixtures(t *testing.T, m *registrytest.Memory) fixtures {
	t.Helper()
	f := m.Fixtures(t)
	fx := fixtures{
		host:  m.Host(),
		multi: f.Index("multi:v1", registrytest.OCI, "linux/amd64", "linux/arm64"),
		amd:   f.Image("amdonly:v1", registrytest.Docker, "linux/amd64"),
		armv7: f.Image("armv7:v1", registrytest.OCI, "linux/arm/v7"),
		att:   f.Attested("attested:v1", "linux/amd64", "linux/arm64"),
		chart: f.Artifact("chart:v1", registrytest.ArtifactHelm),
	}
	fx.multiRef, fx.amdRef, fx.armRef = fx.multi.Ref, fx.amd.Ref, fx.armv7.Ref
	return fx
}

// run runs the command as main does, with an empty docker config directory unless the
// test set DOCKER_CONFIG, and returns stdout, stderr and the exit status.
func run(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	if os.Getenv("DOCKER_CONFIG") == "" {
		t.Setenv("DOCKER_CONFIG", t.TempDir())
	}
	var out, errOut bytes.Buffer
	cmd := NewCommand(genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	if err != nil {
		fmt.Fprintln(&errOut, "error:", err)
	}
	return out.String(), errOut.String(), ExitCode(err)
}

// writeDockerConfig writes a docker config.json granting user:password on host and
// points DOCKER_CONFIG at it.
func writeDockerConfig(t *testing.T, host, user, password string) {
	t.Helper()
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	body := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, auth)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
}

// testDecider judges pods under the plugin's default settings, with the 32-bit
// rule for hosts, as --run-32bit sets it.
func testDecider(t *testing.T, hosts ...string) *decider {
	t.Helper()
	f := decisionFlags{run32Bit: hosts, schedulers: []string{decision.DefaultSchedulerName}}
	settings, _, err := f.load()
	if err != nil {
		t.Fatal(err)
	}
	return &decider{settings: settings}
}
