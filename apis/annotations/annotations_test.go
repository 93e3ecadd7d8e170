package annotations

import (
	"strings"
	"testing"
)

func TestParseSkip(t *testing.T) {
	for _, tc := range []struct {
		value   string
		skip    bool
		invalid bool
	}{
		{"", false, false},
		{"true", true, false},
		{"True", true, false},
		{"TRUE", true, false},
		{"t", true, false},
		{"1", true, false},
		{"false", false, false},
		{"False", false, false},
		{"0", false, false},
		{"yes", false, true},
		{" true", false, true},
		{"on", false, true},
	} {
		skip, err := ParseSkip(tc.value)
		if skip != tc.skip || (err != nil) != tc.invalid {
			t.Errorf("ParseSkip(%q) = %v, %v; want %v, invalid %v", tc.value, skip, err, tc.skip, tc.invalid)
		}
		if err != nil && !strings.Contains(err.Error(), Skip) {
			t.Errorf("ParseSkip(%q): the error does not name the annotation: %v", tc.value, err)
		}
	}
}
