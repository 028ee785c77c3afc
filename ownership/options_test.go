package ownership_test

import (
	"strings"
	"testing"

	"github.com/steadyk8s/steady/ownership"
)

// Each option is a small exported type implementing the ApplyTo of every
// call it makes sense for.
var (
	_ ownership.MutateOption = ownership.Adopt{}
	_ ownership.ApplyOption  = ownership.Adopt{}
	_ ownership.ApplyOption  = ownership.Force{}
)

func TestOptions(t *testing.T) {
	var m ownership.MutateOptions
	var a ownership.ApplyOptions
	if m != (ownership.MutateOptions{}) || a.Adopt || a.Force {
		t.Fatal("the zero options are not 'no option'")
	}
	ownership.Adopt{}.ApplyToMutate(&m)
	ownership.Adopt{}.ApplyToApply(&a)
	if !m.Adopt || !a.Adopt || a.Force {
		t.Errorf("Adopt{}: %+v %+v", m, a)
	}
	ownership.Force{}.ApplyToApply(&a)
	if !a.Force {
		t.Error("Force{} did not set Force")
	}
	msg := (&ownership.AlreadyOwnedError{Child: "ConfigMap ns/c", Owner: "Widget ns/b", Controller: "Widget a"}).Error()
	if !strings.Contains(msg, "ownership.Adopt{}") {
		t.Errorf("the error does not name the option as it is spelled now: %s", msg)
	}
}
