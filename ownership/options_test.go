package ownership_test

import (
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/ownership"
)

// Each option is a small exported type implementing the ApplyTo of every
// call it makes sense for.
var (
	_ ownership.CreateOrUpdateOption         = ownership.Adopt{}
	_ ownership.CreateOrPatchOption          = ownership.Adopt{}
	_ ownership.ApplyOption                  = ownership.Adopt{}
	_ ownership.SetControllerReferenceOption = ownership.Adopt{}
	_ ownership.ApplyOption                  = ownership.Force{}
	_ ownership.CreateOrUpdateOption         = ownership.WithAPIReader{}
	_ ownership.CreateOrPatchOption          = ownership.WithAPIReader{}
)

func TestOptions(t *testing.T) {
	var u ownership.CreateOrUpdateOptions
	var p ownership.CreateOrPatchOptions
	var a ownership.ApplyOptions
	var s ownership.SetControllerReferenceOptions
	if u != (ownership.CreateOrUpdateOptions{}) || a.Adopt || a.Force {
		t.Fatal("the zero options are not 'no option'")
	}
	ownership.Adopt{}.ApplyToCreateOrUpdate(&u)
	ownership.Adopt{}.ApplyToCreateOrPatch(&p)
	ownership.Adopt{}.ApplyToApply(&a)
	ownership.Adopt{}.ApplyToSetControllerReference(&s)
	if !u.Adopt || !p.Adopt || !a.Adopt || !s.Adopt || a.Force {
		t.Errorf("Adopt{}: %+v %+v %+v %+v", u, p, a, s)
	}
	ownership.Force{}.ApplyToApply(&a)
	if !a.Force {
		t.Error("Force{} did not set Force")
	}
	r := fakeReader{}
	ownership.WithAPIReader{Reader: r}.ApplyToCreateOrUpdate(&u)
	ownership.WithAPIReader{Reader: r}.ApplyToCreateOrPatch(&p)
	if u.APIReader != r || p.APIReader != r {
		t.Errorf("WithAPIReader: %+v %+v", u, p)
	}
	msg := (&ownership.AlreadyOwnedError{Child: "ConfigMap ns/c", Owner: "Widget ns/b", Controller: "Widget a"}).Error()
	if !strings.Contains(msg, "ownership.Adopt{}") {
		t.Errorf("the error does not name the option as it is spelled now: %s", msg)
	}
}

// fakeReader is a client.Reader to compare by identity.
type fakeReader struct{ client.Reader }
