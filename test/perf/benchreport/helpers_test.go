package benchreport

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// result is a go test -bench result line of one run of name, as go test prints it
// with GOMAXPROCS=2: the -2 suffix, one iteration, then value-unit pairs.
func result(name string, pairs ...any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s-2 \t       1", name)
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(&b, "\t %v %v", pairs[i], pairs[i+1])
	}
	return b.String()
}

// parse returns the results of lines.
func parse(t *testing.T, lines ...string) *Results {
	t.Helper()
	r := NewResults()
	if err := r.Parse(strings.NewReader(strings.Join(lines, "\n"))); err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return r
}

// parseFiles returns the results of files under testdata.
func parseFiles(t *testing.T, names ...string) *Results {
	t.Helper()
	r := NewResults()
	for _, n := range names {
		f, err := os.Open(filepath.Join("testdata", n))
		if err != nil {
			t.Fatal(err)
		}
		err = r.Parse(f)
		f.Close()
		if err != nil {
			t.Fatalf("Parse %s: %v", n, err)
		}
	}
	return r
}

// checkNotes fails t unless notes contain each of want, or, when want is empty, are empty.
func checkNotes(t *testing.T, notes, want []string) {
	t.Helper()
	all := strings.Join(notes, "\n")
	for _, n := range want {
		if !strings.Contains(all, n) {
			t.Errorf("notes lack %q; they are:\n%s", n, all)
		}
	}
	if len(want) == 0 && len(notes) > 0 {
		t.Errorf("want no note, got:\n%s", all)
	}
}
