package benchreport

import "testing"

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		format func(float64) string
		in     float64
		want   string
	}{
		{f0, 396.6, "397"},
		{f1, 38.35, "38.4"},
		{f2, 0.8, "0.80"},
		{ns, 108.7, "109 ns"},
		{ns, 1234, "1.23 µs"},
		{ns, 2e6, "2 ms"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.format(tc.in); got != tc.want {
				t.Errorf("format(%v) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
