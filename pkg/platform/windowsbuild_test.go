package platform

import "testing"

func TestPlatformWindowsBuild(t *testing.T) {
	for _, tc := range []struct {
		p    Platform
		want string
	}{
		{Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.1234"}, "10.0.17763"},
		{Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.20348"}, "10.0.20348"},
		{Platform{OS: "windows", Architecture: "amd64"}, ""},
		{Platform{OS: "linux", Architecture: "amd64", OSVersion: "10.0.17763.1"}, ""},
	} {
		if got := tc.p.WindowsBuild(); got != tc.want {
			t.Errorf("%+v.WindowsBuild() = %q, want %q", tc.p, got, tc.want)
		}
	}
}
