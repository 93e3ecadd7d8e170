package bounded

import "testing"

func TestTrim(t *testing.T) {
	tests := []struct {
		name     string
		entries  map[string]int // value < 0 means expired
		limit    int
		wantLen  int
		mustKeep []string
	}{
		{name: "under the limit untouched", entries: map[string]int{"a": -1, "b": 1}, limit: 3, wantLen: 2, mustKeep: []string{"a", "b"}},
		{name: "expired go first", entries: map[string]int{"a": -1, "b": 1, "c": 2}, limit: 3, wantLen: 2, mustKeep: []string{"b", "c"}},
		{name: "then arbitrary ones", entries: map[string]int{"a": 1, "b": 2, "c": 3}, limit: 3, wantLen: 2},
		{name: "all expired", entries: map[string]int{"a": -1, "b": -2}, limit: 2, wantLen: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			Trim(tc.entries, tc.limit, func(v int) bool { return v < 0 })
			if len(tc.entries) != tc.wantLen {
				t.Errorf("len = %d, want %d (%v)", len(tc.entries), tc.wantLen, tc.entries)
			}
			for _, k := range tc.mustKeep {
				if _, ok := tc.entries[k]; !ok {
					t.Errorf("%q was evicted although %d entries fit", k, tc.limit-1)
				}
			}
		})
	}
}
