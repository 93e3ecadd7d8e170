package hostglob

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		glob    string
		wantErr string // "" when valid
	}{
		{"registry.example.com", ""},
		{"*.example.com", ""},
		{"registry.local:5000", ""},
		{"*.*.io", ""},
		{"[::1]:5000", ""},
		{"127.0.0.1", ""},
		{"", "must not be empty"},
		{"https://registry.example.com", "without scheme or path"},
		{"registry.example.com/team", "without scheme or path"},
		{"[", "malformed glob"},
		{"0.%00", "host[:port] pattern"}, // found by FuzzHostPolicy: matched no host, itself included
		{"user@registry.example.com", "host[:port] pattern"},
		{"registry.example.com?x", "host[:port] pattern"},
		{"registry.example.com#x", "host[:port] pattern"},
		{"registry:port", "host[:port] pattern"},
	} {
		err := Validate(tc.glob)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("Validate(%q) = %v, want nil", tc.glob, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Validate(%q) = %v, want an error saying %q", tc.glob, err, tc.wantErr)
		}
	}
}
