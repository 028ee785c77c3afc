package object

import (
	"strings"
	"testing"
)

// TestNamesAgreeOnComposedEdges: every prefix of a set of edge cases
// (lengths 252–254, upper case, empty labels, non-ASCII and invalid
// UTF-8, a trailing newline) joined by zero, one or two slashes to every
// name of another (lengths 62–64, the same odd bytes).
func TestNamesAgreeOnComposedEdges(t *testing.T) {
	long := func(n int) string { // n bytes of dot-separated labels of 49
		s := []byte(strings.Repeat(strings.Repeat("a", 49)+".", 6)[:n])
		s[n-1] = 'a'
		return string(s)
	}
	prefixes := []string{"", "a", "A", "a.b", "a..b", ".a", "a.", "a-", "-a", "a_b", "é", "a\xff", "a\n", "0", "a-b.c-d",
		long(252), long(253), long(254), strings.Repeat("a", 253), strings.Repeat("a", 254), strings.Repeat("a", 64)}
	names := []string{"", "a", "A", "-a", "a-", "a.b", "a..b", "_a", "a_", "é", "\xff", "a\n", "a b", "a:b",
		strings.Repeat("a", 62), strings.Repeat("a", 63), strings.Repeat("a", 64), "A" + strings.Repeat(".", 61) + "Z"}
	for _, p := range prefixes {
		for _, n := range names {
			namesAgree(t, p+n)
			namesAgree(t, p+"/"+n)
			namesAgree(t, p+"//"+n)
			namesAgree(t, p+"/"+n+"/")
			namesAgree(t, p+"/"+n+"/"+n)
		}
	}
}
