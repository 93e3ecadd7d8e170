package annotations

import (
	"slices"
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

// TestParseSkipNamesWhatItAccepts: the error lists every value that ParseSkip accepts
// and no other, so a person can pick one from the message.
func TestParseSkipNamesWhatItAccepts(t *testing.T) {
	_, err := ParseSkip("yes")
	if err == nil {
		t.Fatal(`ParseSkip("yes"): no error`)
	}
	_, list, ok := strings.Cut(err.Error(), "want one of ")
	list, _, _ = strings.Cut(list, ")")
	if !ok || list == "" {
		t.Fatalf("the error lists no accepted values: %v", err)
	}
	listed := strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' })
	listed = slices.DeleteFunc(listed, func(s string) bool { return s == "or" })
	for _, v := range listed {
		if _, err := ParseSkip(v); err != nil {
			t.Errorf("the error lists %q, which ParseSkip refuses: %v", v, err)
		}
	}
	// Every spelling strconv.ParseBool accepts.
	for _, v := range []string{"1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False"} {
		if !slices.Contains(listed, v) {
			t.Errorf("ParseSkip accepts %q, which the error does not list: %v", v, err)
		}
	}
}
