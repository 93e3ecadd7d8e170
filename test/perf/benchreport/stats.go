package benchreport

import "slices"

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
