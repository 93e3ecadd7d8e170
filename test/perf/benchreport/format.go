package benchreport

import "strconv"

// f0, f1 and f2 format a value with that many decimals.
func f0(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// ns formats a duration in nanoseconds with three significant digits.
func ns(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + " ms"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + " µs"
	}
	return strconv.FormatFloat(v, 'g', 3, 64) + " ns"
}
