package benchreport

import (
	"fmt"
	"math"
	"slices"
)

// median of vs, and whether there was any value. vs is left as it is.
func median(vs []float64) (float64, bool) {
	if len(vs) == 0 {
		return 0, false
	}
	s := slices.Sorted(slices.Values(vs))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2, true
	}
	return s[len(s)/2], true
}

// sum of vs, and whether there was any value.
func sum(vs []float64) (float64, bool) {
	s := 0.0
	for _, v := range vs {
		s += v
	}
	return s, len(vs) > 0
}

// spread describes how vs varied: its least and greatest value, and half the range
// as a percentage of the middle value (the upper middle one for an even count).
// ok is false for fewer than two values, which have no spread.
func spread(vs []float64) (lo, hi, halfRangePercent float64, ok bool) {
	if len(vs) < 2 {
		return 0, 0, 0, false
	}
	s := slices.Sorted(slices.Values(vs))
	lo, hi = s[0], s[len(s)-1]
	return lo, hi, (hi - lo) / s[len(s)/2] * 100 / 2, true
}

// pairedRatios divides subject by base round by round: the rounds run every
// workload in turn, so the i-th values of two workloads were measured side by
// side, under the same load. It returns nil unless both have the same number of
// values, two or more, and no base value is zero.
func pairedRatios(base, subject []float64) []float64 {
	if len(base) != len(subject) || len(base) < 2 {
		return nil
	}
	out := make([]float64, len(base))
	for i := range base {
		if base[i] == 0 {
			return nil
		}
		out[i] = subject[i] / base[i]
	}
	return out
}

// roundsVerdict says how many per-round ratios meet target and, by the sign
// test, how confident the rounds make the verdict: if the ratio were as likely
// to fall on either side of target in any round, all n rounds would agree with
// probability 2·0.5ⁿ, so n agreeing rounds support their side with confidence
// 1 − 0.5ⁿ (97 % for 5 rounds, 88 % for 3). Rounds that disagree support no
// confident verdict.
func roundsVerdict(ratios []float64, target float64) string {
	met := 0
	for _, q := range ratios {
		if q >= target {
			met++
		}
	}
	lo, hi := slices.Min(ratios), slices.Max(ratios)
	s := fmt.Sprintf("per round %s–%s, ≥ %.2f in %d of %d rounds", f2(lo), f2(hi), target, met, len(ratios))
	confidence := 100 * (1 - math.Pow(0.5, float64(len(ratios))))
	switch met {
	case len(ratios):
		return s + fmt.Sprintf(" (sign test: met with %.0f %% confidence)", confidence)
	case 0:
		return s + fmt.Sprintf(" (sign test: missed with %.0f %% confidence)", confidence)
	}
	return s + " (the rounds disagree: no confident verdict)"
}
