package benchreport

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{name: "f0 rounds", got: f0(396.6), want: "397"},
		{name: "f1", got: f1(38.35), want: "38.4"},
		{name: "f2", got: f2(0.8), want: "0.80"},
		{name: "ns below a microsecond", got: ns(108.7), want: "109 ns"},
		{name: "ns in microseconds", got: ns(1234), want: "1.23 µs"},
		{name: "ns in milliseconds", got: ns(2e6), want: "2 ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}
