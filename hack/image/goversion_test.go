package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// --go-version refuses a binary built with another toolchain, or one without
// Go's build information, naming the binary and both versions.
func TestCheckGoVersion(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	notGo := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notGo, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, want string
		binaries   []string
		errHas     []string
	}{
		{name: "the toolchain that built it", want: runtime.Version(), binaries: []string{"linux/amd64=" + self}},
		{name: "another toolchain", want: "go1.0.1", binaries: []string{"linux/amd64=" + self},
			errHas: []string{"linux/amd64=" + self, "built with " + runtime.Version(), "not go1.0.1", "GOTOOLCHAIN=go1.0.1"}},
		{name: "one of two platforms is not a Go binary", want: runtime.Version(), binaries: []string{"linux/amd64=" + self, "linux/arm64=" + notGo},
			errHas: []string{"linux/arm64=" + notGo, "no Go build information"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkGoVersion(tc.binaries, tc.want)
			if len(tc.errHas) == 0 {
				if err != nil {
					t.Fatalf("checkGoVersion: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("checkGoVersion accepted it")
			}
			for _, s := range tc.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}
