package archfilter

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/archfilter/archfilter/apis/config"
)

func TestNewRejectsBadArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    func(t *testing.T) runtime.Object
		wantErr string
	}{
		{
			name:    "wrong type",
			args:    func(*testing.T) runtime.Object { return &v1.Pod{} },
			wantErr: "got *v1.Pod",
		},
		{
			name: "invalid failurePolicy",
			args: func(t *testing.T) runtime.Object {
				a := defaultArgs(t)
				a.FailurePolicy = "Sometimes"
				return a
			},
			wantErr: "failurePolicy",
		},
		{
			name: "invalid maxWait",
			args: func(t *testing.T) runtime.Object {
				a := defaultArgs(t)
				a.MaxWait.Duration = 0
				return a
			},
			wantErr: "maxWait",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			h := newHarness(t, ctx, harnessConfig{})
			_, err := New(ctx, tc.args(t), h.handle)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("New: error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestNewPluginRejectsBadSettings(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*config.ArchFilterArgs)
		wantErr string
	}{
		{name: "fallbackPlatforms", mutate: func(a *config.ArchFilterArgs) { a.FallbackPlatforms = []string{"amd64"} }, wantErr: "fallbackPlatforms"},
		{name: "preferredPlatforms", mutate: func(a *config.ArchFilterArgs) {
			a.PreferredPlatforms = []config.PlatformPreference{{Platform: "linux", Weight: 1}}
		}, wantErr: "preferredPlatforms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			h := newHarness(t, ctx, harnessConfig{})
			args := defaultArgs(t)
			tc.mutate(args)
			_, err := newPlugin(ctx, args, h.handle, deps{resolver: h.res, credentials: h.creds, clock: h.clock})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("newPlugin: error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestPluginBasics(t *testing.T) {
	ctx := testContext(t)
	h := newHarness(t, ctx, harnessConfig{})
	if h.pl.Name() != Name {
		t.Errorf("Name() = %q, want %q", h.pl.Name(), Name)
	}
	if h.pl.PreFilterExtensions() != nil {
		t.Error("PreFilterExtensions() is not nil")
	}
	if h.pl.ScoreExtensions() == nil {
		t.Error("ScoreExtensions() is nil")
	}
}
