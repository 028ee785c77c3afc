package object

import (
	"math/rand/v2"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// namesAgree fails t unless IsLabelValue and IsQualifiedName say of s what
// k8s.io/apimachinery's validation says.
func namesAgree(t *testing.T, s string) {
	t.Helper()
	if got, want := IsLabelValue(s), len(validation.IsValidLabelValue(s)) == 0; got != want {
		t.Errorf("IsLabelValue(%q) = %v, validation says %v", s, got, want)
	}
	if got, want := IsQualifiedName(s), len(validation.IsQualifiedName(s)) == 0; got != want {
		t.Errorf("IsQualifiedName(%q) = %v, validation says %v", s, got, want)
	}
}

// TestNamesAgreeWithValidation: the edges by hand, then random strings over
// an alphabet of every character class the rules tell apart.
func TestNamesAgreeWithValidation(t *testing.T) {
	for _, s := range []string{
		"", "a", "A", "0", "-", "_", ".", "/", "a-", "-a", "a.b", "a..b", "a_b", "A_B-c.d", "a b", "ä",
		strings.Repeat("a", 63), strings.Repeat("a", 64), "a" + strings.Repeat("-", 61) + "a",
		"example.com/cleanup", "Example.com/cleanup", "example.com/", "/cleanup", "a/b/c", "a//b",
		"example..com/x", ".example.com/x", "example.com./x", "-example.com/x", "ex-ample.com/x", "ex_ample.com/x",
		strings.Repeat("a", 253) + "/x", strings.Repeat("a", 254) + "/x", strings.Repeat("a.", 126) + "a/x",
		"example.com/" + strings.Repeat("b", 63), "example.com/" + strings.Repeat("b", 64), "example.com/-b",
		"steady.dev/Finalizer", "Team.bench.steady.dev", "system:controller",
	} {
		namesAgree(t, s)
	}
	const alphabet = "aZ09-_./:ä "
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		n := r.IntN(12)
		if r.IntN(20) == 0 {
			n = 60 + r.IntN(200) // near and past the length limits
		}
		var b strings.Builder
		for range n {
			if r.IntN(4) == 0 {
				b.WriteByte(alphabet[r.IntN(len(alphabet))])
			} else {
				b.WriteByte("abz09"[r.IntN(5)])
			}
		}
		namesAgree(t, b.String())
		if t.Failed() {
			return
		}
	}
}

// FuzzNames: the same check on whatever the fuzzer finds.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"", "a", "example.com/cleanup", "a/b", "-a", strings.Repeat("a", 64)} {
		f.Add(s)
	}
	f.Fuzz(namesAgree)
}

func BenchmarkIsLabelValue(b *testing.B) {
	for _, s := range []string{"Team.bench.steady.dev", "team-00042"} {
		b.Run(s, func(b *testing.B) {
			b.Run("steady", func(b *testing.B) {
				for b.Loop() {
					IsLabelValue(s)
				}
			})
			b.Run("validation", func(b *testing.B) {
				for b.Loop() {
					_ = validation.IsValidLabelValue(s)
				}
			})
		})
	}
}
