package framework

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// RunSuite is a test package's TestMain: it brings up the cluster of the
// provider the environment names, seeds images into its registries, runs the
// tests with the Env given to use (nil, with the reason, when there is no
// provider: the tests then skip), calls after (which may fail the run), and
// takes the cluster down. It returns the exit status.
func RunSuite(m *testing.M, suite string, images []Image, use func(env *Env, skipReason string), after func() error) int {
	provider, reason := ProviderFromEnv()
	if provider == nil {
		use(nil, reason)
		return m.Run()
	}
	ctx := context.Background()
	start := time.Now()
	e, err := provider.Up(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: bringing up the %s cluster: %v\n", suite, provider.Name(), err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "%s: %s cluster ready in %s (kubeconfig %s)\n", suite, provider.Name(), time.Since(start).Round(time.Second), e.Kubeconfig)
	if err := Seed(ctx, e.Public, e.Private, images); err != nil {
		fmt.Fprintf(os.Stderr, "%s: seeding the registries: %v\n", suite, err)
		_ = provider.Down(ctx)
		return 1
	}
	use(e, "")
	code := m.Run()
	if after != nil {
		if err := after(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", suite, err)
			code = 1
		}
	}
	if err := provider.Down(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "%s: tearing down: %v\n", suite, err)
	}
	return code
}

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// DNSName turns s (a test's name) into a DNS label of at most 50 characters,
// for namespaces, scheduler names and log directories.
func DNSName(s string) string {
	s = strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > 50 {
		s = strings.TrimRight(s[:50], "-")
	}
	return s
}
