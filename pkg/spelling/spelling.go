// Package spelling finds the known word nearest a misspelt one, so that a message can
// say "did you mean ...?". It owns the distance and the threshold, nothing about which
// words are known: callers pass their own.
package spelling

import "unicode/utf8"

// Nearest returns the candidate closest to word by optimal string alignment distance
// (insertions, deletions, substitutions and swaps of two adjacent characters each
// count 1: "platfroms" is 1 from "platforms", "arm46" 1 from "arm64"), the first one
// listed on a tie, so callers list the likelier candidates first. ok is false when none
// is near enough to be a slip of the keyboard: at most 1 edit for words of up to 4
// characters, 2 for longer ones, and never the whole word.
func Nearest(word string, candidates []string) (nearest string, ok bool) {
	n := utf8.RuneCountInString(word)
	limit := 2
	if n <= 4 {
		limit = 1
	}
	best := limit + 1
	for _, c := range candidates {
		// The distance is at least the difference in length: a candidate that much
		// shorter or longer is not near, and a long word (a value of any length in
		// an annotation) costs no table against each candidate.
		if diff := n - utf8.RuneCountInString(c); diff > limit || -diff > limit {
			continue
		}
		if d := Distance(word, c); d < best && d < utf8.RuneCountInString(c) {
			nearest, best = c, d
		}
	}
	return nearest, best <= limit
}

// Distance is the optimal string alignment distance between a and b, by runes.
func Distance(a, b string) int {
	x, y := []rune(a), []rune(b)
	// Three rows of the dynamic-programming table: two back, one back, this one. On
	// the stack for words of usual length: the scheduler lints every pod it enqueues.
	var rows [3][48]int
	var prev2, prev, cur []int
	if n := len(y) + 1; n <= len(rows[0]) {
		prev2, prev, cur = rows[0][:n], rows[1][:n], rows[2][:n]
	} else {
		prev2, prev, cur = make([]int, n), make([]int, n), make([]int, n)
	}
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(y)]
}
