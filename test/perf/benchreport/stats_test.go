package benchreport

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMedianAndSum(t *testing.T) {
	tests := []struct {
		name   string
		fn     func([]float64) (float64, bool)
		vs     []float64
		want   float64
		wantOK bool
	}{
		{name: "median of none", fn: median, vs: nil, want: 0, wantOK: false},
		{name: "median of one", fn: median, vs: []float64{7}, want: 7, wantOK: true},
		{name: "median of an odd count, unsorted", fn: median, vs: []float64{0.96, 0.80, 0.96}, want: 0.96, wantOK: true},
		{name: "median of an even count: mean of the middle two", fn: median, vs: []float64{4, 1, 3, 2}, want: 2.5, wantOK: true},
		{name: "sum of none", fn: sum, vs: nil, want: 0, wantOK: false},
		{name: "sum of zeros: they are values", fn: sum, vs: []float64{0, 0}, want: 0, wantOK: true},
		{name: "sum of several", fn: sum, vs: []float64{1, 2, 3.5}, want: 6.5, wantOK: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.fn(tc.vs)
			if diff := cmp.Diff([2]any{tc.want, tc.wantOK}, [2]any{got, ok}); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestSpread(t *testing.T) {
	type result struct {
		Lo, Hi, Pct float64
		OK          bool
	}
	tests := []struct {
		name string
		vs   []float64
		want result
	}{
		{name: "none", vs: nil, want: result{}},
		{name: "one run has no spread", vs: []float64{5}, want: result{}},
		{name: "three runs", vs: []float64{110, 90, 100}, want: result{Lo: 90, Hi: 110, Pct: 10, OK: true}},
		{name: "even count: relative to the upper middle value", vs: []float64{1, 4, 2, 3}, want: result{Lo: 1, Hi: 4, Pct: 50, OK: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi, pct, ok := spread(tc.vs)
			if diff := cmp.Diff(tc.want, result{lo, hi, pct, ok}); diff != "" {
				t.Errorf("spread(%v) (-want,+got):\n%s", tc.vs, diff)
			}
		})
	}
}

func TestRoundsVerdict(t *testing.T) {
	for _, tc := range []struct {
		name          string
		base, subject []float64
		want          string // "" when the rounds cannot be paired
	}{
		{"five rounds all met", []float64{100, 100, 100, 100, 100}, []float64{99, 100, 101, 102, 98},
			"per round 0.98–1.02, ≥ 0.98 in 5 of 5 rounds (sign test: met with 97 % confidence)"},
		{"three rounds all missed", []float64{100, 100, 100}, []float64{80, 90, 85},
			"per round 0.80–0.90, ≥ 0.98 in 0 of 3 rounds (sign test: missed with 88 % confidence)"},
		{"rounds disagree", []float64{100, 100, 100, 100, 100}, []float64{99, 90, 101, 102, 97},
			"per round 0.90–1.02, ≥ 0.98 in 3 of 5 rounds (the rounds disagree: no confident verdict)"},
		{"unequal rounds", []float64{100, 100}, []float64{99, 100, 101}, ""},
		{"one round", []float64{100}, []float64{99}, ""},
		{"zero base", []float64{100, 0}, []float64{99, 100}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if rounds := pairedRatios(tc.base, tc.subject); rounds != nil {
				got = roundsVerdict(rounds, 0.98)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
