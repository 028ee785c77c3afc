package ownership

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRecordFormAtTheLabelLimits: an owner's record goes in the labels
// exactly where both its kind label ("<Kind>.<group>") and its name are
// label values the API server takes (1 to 63 characters of [A-Za-z0-9-_.],
// alphanumeric at both ends), else in the annotation: at 63 and 64
// characters, with a group that makes the kind label too long, and for
// names a label value refuses.
func TestRecordFormAtTheLabelLimits(t *testing.T) {
	group := func(n int) string { // a group that makes "Kind." + group n characters long
		return strings.Repeat("g", n-len("Kind.")-len(".io")) + ".io"
	}
	type ref struct{ apiVersion, kind, name string }
	named := func(names ...string) []ref {
		var out []ref
		for _, n := range names {
			out = append(out, ref{"v1", "ConfigMap", n})
		}
		return out
	}
	want := map[string][]ref{
		inLabels: append(named("a", strings.Repeat("n", 63), "A.b_c-9"),
			ref{"v1", strings.Repeat("K", 63), "a"},
			ref{group(63) + "/v1", "Kind", strings.Repeat("n", 63)}),
		inAnnotation: append(named(strings.Repeat("n", 64), "", "-a", "a-", "a.", "_a", "system:steady", "a/b", "a\n", "é"),
			ref{"v1", strings.Repeat("K", 64), "a"},
			ref{group(64) + "/v1", "Kind", "a"},
			ref{"v1", "", "a"},
			ref{"v1", "Config Map", "a"}),
	}
	for form, refs := range want {
		for _, tc := range refs {
			for _, ns := range []string{"", "ns"} {
				r := newRecord(metav1.OwnerReference{APIVersion: tc.apiVersion, Kind: tc.kind, Name: tc.name}, ns)
				if got := r.form(); got != form {
					t.Errorf("%s %s %q (%d characters, kind label %d) in %q: %s, want %s",
						tc.apiVersion, tc.kind, tc.name, len(tc.name), len(r.kindLabel), ns, got, form)
				}
			}
		}
	}
}
