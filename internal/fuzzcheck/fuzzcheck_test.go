package fuzzcheck

import (
	"testing"
	"time"
)

// recorder is a testing.TB that records failures instead of failing the test.
type recorder struct {
	testing.TB
	failed []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failed = append(r.failed, format)
}

var sink []byte

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits Limits
		fn     func()
		fails  bool
	}{
		{"small allocation", Limits{Alloc: MiB}, func() { sink = make([]byte, 1024) }, false},
		{"allocation over the limit", Limits{Alloc: MiB}, func() { sink = make([]byte, 4*MiB) }, true},
		{"no allocation limit", Limits{}, func() { sink = make([]byte, 4*MiB) }, false},
		{"over the time limit", Limits{Time: time.Millisecond}, func() { time.Sleep(20 * time.Millisecond) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			Within(r, tc.name, tc.limits, tc.fn)
			if got := len(r.failed) > 0; got != tc.fails {
				t.Errorf("Within failed = %v (%q), want %v", got, r.failed, tc.fails)
			}
		})
	}
}

func TestPerInputByte(t *testing.T) {
	if got := PerInputByte(make([]byte, 10), 8, 100); got != 180 {
		t.Errorf("PerInputByte = %d, want 180", got)
	}
}
