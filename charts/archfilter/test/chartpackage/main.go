// Command chartpackage packages charts/archfilter for a release with Helm's
// library, as `helm package --version --app-version` does, and points the
// chart's default images at the release's repositories, so that the packaged
// chart's defaults pull what make release pushed. make release runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
)

// repositoryLine is values.yaml's image.repository, placementRepositoryLine
// its placement.image.repository (the only repository four spaces in).
var (
	repositoryLine          = regexp.MustCompile(`(?m)^  repository: \S+$`)
	placementRepositoryLine = regexp.MustCompile(`(?m)^    repository: \S+$`)
)

func main() {
	chartDir := flag.String("chart", "", "the chart's directory")
	version := flag.String("version", "", "the chart's version (SemVer 2, no leading v)")
	appVersion := flag.String("app-version", "", "the image tag the chart runs by default (the release, vX.Y.Z)")
	repository := flag.String("repository", "", "image.repository of the packaged chart (empty: unchanged)")
	placementRepository := flag.String("placement-repository", "", "placement.image.repository of the packaged chart (empty: unchanged, the chart names it from image.repository)")
	out := flag.String("out", ".", "where to write <name>-<version>.tgz")
	flag.Parse()
	if err := run(*chartDir, *version, *appVersion, *repository, *placementRepository, *out); err != nil {
		fmt.Fprintln(os.Stderr, "chartpackage:", err)
		os.Exit(1)
	}
}

func run(dir, version, appVersion, repository, placementRepository, out string) error {
	if dir == "" || version == "" || appVersion == "" {
		return fmt.Errorf("-chart, -version and -app-version are required")
	}
	linter := lint.AllWithKubeVersion(dir, nil, "kube-system", nil)
	for _, msg := range linter.Messages {
		if msg.Severity >= support.WarningSev {
			return fmt.Errorf("helm lint %s: %s", dir, msg)
		}
	}
	c, err := loader.Load(dir)
	if err != nil {
		return err
	}
	c.Metadata.Version = version
	c.Metadata.AppVersion = appVersion
	for _, r := range []struct {
		line       *regexp.Regexp
		indent     string
		path, repo string
	}{
		{repositoryLine, "  ", "image.repository", repository},
		{placementRepositoryLine, "    ", "placement.image.repository", placementRepository},
	} {
		if r.repo == "" {
			continue
		}
		for _, f := range c.Raw {
			if f.Name != chartutil.ValuesfileName {
				continue
			}
			if n := len(r.line.FindAll(f.Data, -1)); n != 1 {
				return fmt.Errorf("%s: want one %s line, found %d", chartutil.ValuesfileName, r.path, n)
			}
			f.Data = r.line.ReplaceAll(f.Data, []byte(r.indent+"repository: "+r.repo))
			values, err := chartutil.ReadValues(f.Data)
			if err != nil {
				return err
			}
			c.Values = values
			if got, err := values.PathValue(r.path); err != nil || got != r.repo {
				return fmt.Errorf("%s not replaced: %v (%v)", r.path, got, err)
			}
		}
	}
	if err := c.Validate(); err != nil {
		return err
	}
	path, err := chartutil.Save(c, out)
	if err != nil {
		return err
	}
	fmt.Println(path)
	return nil
}
