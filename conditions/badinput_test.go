package conditions_test

import (
	"errors"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadyk8s/steady/conditions"
)

// TestValidateBadConditions: what the API server refuses in a
// metav1.Condition is a *FieldError naming the condition's field; Set
// fits a bad reason and an over-long message, so that what it stores
// validates, and leaves a bad type or status for Validate (and the
// Patcher, reconcile's TestPatchBadInput) to refuse.
func TestValidateBadConditions(t *testing.T) {
	ok := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Done", Message: "fine"}
	for _, tc := range []struct {
		name   string
		change func(c *metav1.Condition)
		field  string // "" when valid
	}{
		{"valid", func(c *metav1.Condition) {}, ""},
		{"qualified type", func(c *metav1.Condition) { c.Type = "example.com/Synced" }, ""},
		{"empty reason (cluster-api v1beta1)", func(c *metav1.Condition) { c.Reason = "" }, ""},
		{"type with a space", func(c *metav1.Condition) { c.Type = "not a type" }, "type"},
		{"empty type", func(c *metav1.Condition) { c.Type = "" }, "type"},
		{"type too long", func(c *metav1.Condition) { c.Type = strings.Repeat("T", conditions.MaxTypeLength+1) }, "type"},
		{"status Maybe", func(c *metav1.Condition) { c.Status = "Maybe" }, "status"},
		{"status true (lower case)", func(c *metav1.Condition) { c.Status = "true" }, "status"},
		{"empty status", func(c *metav1.Condition) { c.Status = "" }, "status"},
		{"reason with a space", func(c *metav1.Condition) { c.Reason = "Apply failed" }, "reason"},
		{"reason starting with a digit", func(c *metav1.Condition) { c.Reason = "404" }, "reason"},
		{"reason too long", func(c *metav1.Condition) { c.Reason = strings.Repeat("R", conditions.MaxReasonLength+1) }, "reason"},
		{"message too long", func(c *metav1.Condition) { c.Message = strings.Repeat("m", conditions.MaxMessageLength+1) }, "message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.change(&c)
			err := conditions.Validate(c)
			var fe *conditions.FieldError
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("Validate = %v; want nil", err)
			case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(err.Error(), "field "+tc.field)):
				t.Errorf("Validate = %v; want a *FieldError of field %s", err, tc.field)
			}
			// What Set stores validates but for the type and status it
			// was given, and keeps the message's start.
			w := &setter{}
			conditions.Set(w, c)
			stored := w.GetConditions()[0]
			err = conditions.Validate(stored)
			if errors.As(err, &fe) && fe.Field != "type" && fe.Field != "status" {
				t.Errorf("Set stored %+.80v, which Validate refuses: %v", stored, err)
			}
			if stored.Type != c.Type || stored.Status != c.Status || !strings.HasPrefix(c.Message, strings.SplitN(stored.Message, "…", 2)[0]) {
				t.Errorf("Set lost the type, status or message: %+.80v", stored)
			}
		})
	}
}

type setter struct{ conds []metav1.Condition }

func (s *setter) GetConditions() []metav1.Condition  { return s.conds }
func (s *setter) SetConditions(c []metav1.Condition) { s.conds = c }

// TestValidTypeIsTheAPIPattern: Validate's loop over a type agrees with
// metav1.Condition's pattern on random strings of the characters that
// matter.
func TestValidTypeIsTheAPIPattern(t *testing.T) {
	pattern := regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`)
	const chars = "aZ0-_./"
	rnd := rand.New(rand.NewPCG(1, 2))
	cases := []string{"", "Ready", "example.com/Synced", "a/b/c", "/Ready", "a./R", ".a/R", "a..b/R", "A.com/R", "a-/R", "a/-R", "a/R-", "a/R.x",
		strings.Repeat("R", conditions.MaxTypeLength), strings.Repeat("R", conditions.MaxTypeLength+1)}
	for range 20000 {
		b := make([]byte, rnd.IntN(10))
		for i := range b {
			b[i] = chars[rnd.IntN(len(chars))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		err := conditions.Validate(metav1.Condition{Type: s, Status: metav1.ConditionTrue})
		want := pattern.MatchString(s) && len(s) <= conditions.MaxTypeLength
		if got := err == nil; got != want {
			t.Errorf("type %q: valid %v, the pattern says %v", s, got, want)
		}
	}
}
