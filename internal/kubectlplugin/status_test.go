package kubectlplugin

import (
	"errors"
	"fmt"
	"testing"

	"github.com/archfilter/archfilter/internal/registrytest"
	"github.com/archfilter/archfilter/pkg/resolver"
)

// TestExitStatusPolicy runs inspect and check as main does: 0 when every item was
// answered and can run, 1 for a workload that cannot run, 2 when an item could not be
// answered, which wins over 1. why and report, which need a cluster, are below and in
// test/integration/scheduling.
func TestExitStatusPolicy(t *testing.T) {
	m := registrytest.NewMemory(t)
	fx := pushFixtures(t, m)
	missing := fx.host + "/missing:v1"
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		want  int
	}{
		{name: "inspect: all resolved", args: []string{"inspect", fx.multiRef, fx.amdRef}, want: 0},
		{name: "inspect: one image unknown", args: []string{"inspect", fx.multiRef, missing}, want: ExitInputError},
		{name: "check: ok", stdin: deployment("web", fx.multiRef), args: []string{"check", "-f", "-"}, want: 0},
		{name: "check: misses --platforms", stdin: deployment("mixed", fx.multiRef, fx.amdRef),
			args: []string{"check", "-f", "-", "--platforms", "linux/arm64"}, want: ExitFailed},
		{name: "check: no common platform", stdin: deployment("blocked", fx.amdRef, fx.armRef), args: []string{"check", "-f", "-"}, want: ExitFailed},
		{name: "check: image unknown", stdin: deployment("web", missing), args: []string{"check", "-f", "-"}, want: ExitInputError},
		{name: "check: image unknown beside a workload that cannot run",
			stdin: deployment("web", missing) + "---\n" + deployment("blocked", fx.amdRef, fx.armRef),
			args:  []string{"check", "-f", "-"}, want: ExitInputError},
		{name: "check: unknown kind", stdin: "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n", args: []string{"check", "-f", "-"}, want: ExitInputError},
		{name: "usage: no pod", args: []string{"why"}, want: ExitInputError},
		{name: "usage: unknown flag", args: []string{"report", "--no-such-flag"}, want: ExitInputError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string(nil), tc.args...), "--insecure-registry", fx.host)
			stdout, stderr, code := run(t, tc.stdin, args...)
			if code != tc.want {
				t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.want, stdout, stderr)
			}
		})
	}
}

func TestReportStatus(t *testing.T) {
	yes := readiness{Platform: "linux/amd64", CanRun: true}
	no := readiness{Platform: "linux/arm64", Blocking: "app:v1"}
	for _, tc := range []struct {
		name string
		rows []reportRow
		want int
	}{
		{name: "every workload runs somewhere", rows: []reportRow{{On: []readiness{yes, no}}, {On: []readiness{yes}}}, want: 0},
		{name: "a workload runs on no node platform", rows: []reportRow{{On: []readiness{yes}}, {On: []readiness{no}}}, want: ExitFailed},
		{name: "a workload runs on no platform at all, no nodes", rows: []reportRow{{runsNowhere: true}}, want: ExitFailed},
		{name: "a cluster without nodes", rows: []reportRow{{}}, want: 0},
		{name: "an image unresolved wins", rows: []reportRow{{On: []readiness{no}}, {Error: "NotFound", On: []readiness{no}}}, want: ExitInputError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ExitCode(reportStatus(&reportView{Workloads: tc.rows})); got != tc.want {
				t.Errorf("exit status %d, want %d", got, tc.want)
			}
		})
	}
}

func TestShortError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&resolver.Error{Reason: resolver.ReasonNotFound, StatusCode: 404, CredentialSource: "anonymous", Err: errors.New("GET /v2/x: HTTP 404")}, "NotFound, HTTP 404"},
		{&resolver.Error{Reason: resolver.ReasonUnauthorized, StatusCode: 401, CredentialSource: "anonymous"}, "Unauthorized, HTTP 401, anonymous credentials"},
		{fmt.Errorf("wrapped: %w", &resolver.Error{Reason: resolver.ReasonUnreachable, Err: errors.New("dial tcp: connection refused")}), "Unreachable"},
		{errors.New("something else"), "something else"},
	} {
		if got := shortError(tc.err); got != tc.want {
			t.Errorf("shortError(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
