package validation

import (
	"errors"
	"strings"
	"testing"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestMaxErrors: past MaxErrors, the errors are counted, by one error under the args'
// path, not listed.
func TestMaxErrors(t *testing.T) {
	a := validArgs()
	for range MaxErrors + 37 {
		a.FallbackPlatforms = append(a.FallbackPlatforms, "linux/amd64")
	}
	var agg utilerrors.Aggregate
	if err := ValidateArchFilterArgs(field.NewPath("args"), a); !errors.As(err, &agg) {
		t.Fatalf("error %v, want an aggregate", err)
	}
	errs := agg.Errors()
	if len(errs) != MaxErrors+1 {
		t.Fatalf("%d errors, want %d and one counting the rest", len(errs), MaxErrors)
	}
	var last *field.Error
	if !errors.As(errs[MaxErrors], &last) || last.Field != "args" || !strings.Contains(last.Error(), "36 more errors not listed") {
		t.Errorf("the last error is %v, want one under args counting 36 more", errs[MaxErrors])
	}
}
