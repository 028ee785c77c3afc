package conditions_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/steadyk8s/steady/conditions"
)

func TestFitMessage(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  string
	}{
		{"short", "all good"},
		{"at the limit", strings.Repeat("a", conditions.MaxMessageLength)},
		{"over", strings.Repeat("a", conditions.MaxMessageLength+1)},
		{"far over", strings.Repeat("b", 100000)},
		{"multi-byte at the cut", strings.Repeat("é", 20000)},
		{"four-byte runes", strings.Repeat("𝄞", 9000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := conditions.FitMessage(tc.msg)
			if len(got) > conditions.MaxMessageLength || !utf8.ValidString(got) {
				t.Fatalf("%d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
			}
			if len(tc.msg) <= conditions.MaxMessageLength {
				if got != tc.msg {
					t.Error("a message that fits was changed")
				}
				return
			}
			if !strings.Contains(got, "[cut ") || !strings.HasPrefix(tc.msg, strings.SplitN(got, "… [cut ", 2)[0]) {
				t.Errorf("no marker, or not a prefix: ...%q", got[len(got)-40:])
			}
		})
	}
}

func TestFitReason(t *testing.T) {
	for in, want := range map[string]string{
		"":                        "",
		"Ready":                   "Ready",
		"ApplyFailed":             "ApplyFailed",
		"a,b:c_d":                 "a,b:c_d",
		"Apply failed":            "Apply_failed",
		"404NotFound":             "R404NotFound",
		"Done:":                   "Done",
		"x.y/z":                   "x_y_z",
		"_private":                "R_private",
		strings.Repeat("A", 2000): strings.Repeat("A", conditions.MaxReasonLength),
	} {
		if got := conditions.FitReason(in); got != want {
			t.Errorf("FitReason(%.20q) = %.30q, want %.30q", in, got, want)
		}
	}
}

// Two valid 20,000-byte messages made a 40,030-byte Ready summary that the
// API server refused, and with it the whole status write, on every
// reconcile. The summary, and every Mark, now fits what the server takes.
func TestSummaryOfLongMessagesIsStored(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("test.steady.dev/v1")
	u.SetKind("Gadget")
	u.SetNamespace(env.Namespace(t))
	u.SetName("g")
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	s, err := conditions.ForUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 20000)
	conditions.MarkFalse(s, "Network", "Unreachable", "%s", long)
	conditions.MarkFalse(s, "Storage", "no disk: full", "%s", long+long)
	conditions.SetSummary(s, conditions.Ready)
	if err := env.Client.Status().Update(ctx, u); err != nil {
		t.Fatalf("the API server refused the status: %v", err)
	}
	ready := conditions.Get(s, conditions.Ready)
	if ready == nil || ready.Status != metav1.ConditionFalse || len(ready.Message) > conditions.MaxMessageLength {
		t.Errorf("Ready = %+v", ready)
	}
}
