// Package fuzzcheck holds what every fuzz target of archfilter checks besides "no panic":
// that one input costs bounded memory and bounded time. A parser of untrusted input that
// allocates gigabytes for a kilobyte of input, or spins for seconds, fails here even when it
// returns an error in the end.
//
// The limits are per input and deliberately generous (a fuzz worker shares a loaded
// machine): they catch unbounded growth, not a slow constant. A target states its own
// limits, in terms of what the parser promises: a multiple of the input's size, or the cap
// of its reader (layerfs's layer limit, the resolver's manifest limit).
package fuzzcheck

import (
	"runtime"
	"testing"
	"time"
)

// Limits bounds the cost of one input.
type Limits struct {
	// Alloc is the most bytes fn may allocate (runtime.MemStats.TotalAlloc's growth,
	// garbage included).
	Alloc uint64
	// Time is the most wall time fn may take. Zero means DefaultTime.
	Time time.Duration
}

// DefaultTime is the time limit of Limits that set none: far above what any parser here
// takes for one fuzz input (microseconds to milliseconds), far below the fuzz engine's own
// hang detection, so a loop shows up as a limit exceeded with its input.
const DefaultTime = 2 * time.Second

// engineSlack is added to every allocation limit: MemStats counts the whole process, and
// in a fuzz worker the engine's own goroutine (its coverage and input exchange with the
// coordinator) may allocate a few KiB between the two readings.
const engineSlack = 32 * KiB

// KiB and MiB spell limits.
const (
	KiB = 1 << 10
	MiB = 1 << 20
)

// PerInputByte is the usual allocation limit of a parser: a fixed overhead plus a multiple
// of the input's length.
func PerInputByte(input []byte, perByte, fixed uint64) uint64 {
	return fixed + perByte*uint64(len(input))
}

// Within runs fn once and fails t when it allocated more than l.Alloc bytes (plus
// engineSlack) or ran longer
// than l.Time. what names the input's parser in the failure.
func Within(t testing.TB, what string, l Limits, fn func()) {
	t.Helper()
	limit := l.Time
	if limit == 0 {
		limit = DefaultTime
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	fn()
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; l.Alloc > 0 && alloc > l.Alloc+engineSlack {
		t.Errorf("%s allocated %d bytes for one input, more than its limit of %d (+%d for the fuzz engine)", what, alloc, l.Alloc, engineSlack)
	}
	if took > limit {
		t.Errorf("%s took %v for one input, more than its limit of %v", what, took, limit)
	}
}
