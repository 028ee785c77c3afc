package conditions

import (
	"regexp"
	"strings"
	"testing"
)

// TestValidReasonIsTheAPIPattern compares validReason with metav1.Condition's
// reason pattern on every short string over the characters that matter.
func TestValidReasonIsTheAPIPattern(t *testing.T) {
	pattern := regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)
	alphabet := []string{"a", "Z", "0", "_", ",", ":", "-", " ", "é"}
	var walk func(prefix string, depth int)
	walk = func(prefix string, depth int) {
		if got, want := validReason(prefix), prefix != "" && pattern.MatchString(prefix); got != want {
			t.Errorf("validReason(%q) = %v, the pattern says %v", prefix, got, want)
		}
		if depth == 0 {
			return
		}
		for _, c := range alphabet {
			walk(prefix+c, depth-1)
		}
	}
	walk("", 4)
	if long := "A" + strings.Repeat("b", MaxReasonLength); validReason(long) {
		t.Errorf("a reason of %d bytes is valid", len(long))
	}
}
