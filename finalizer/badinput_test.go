package finalizer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/internal/object"
)

// TestBadFinalizerNames: Register refuses a name the API server would
// refuse in metadata.finalizers with an error naming the field and the
// name, and registers nothing. (reconcile's TestPatchBadInput shows the
// Patcher refusing it before any write.)
func TestBadFinalizerNames(t *testing.T) {
	noop := finalizer.Func(func(context.Context, client.Object) error { return nil })
	for _, name := range []string{"", "Not A Name!", "a/b/c", "example.com/" + strings.Repeat("x", 64), "-cleanup", "example..com/x"} {
		h := finalizer.NewHandler(nil)
		err := h.Register(name, noop)
		var ne *object.FinalizerNameError
		if !errors.As(err, &ne) || ne.Finalizer != name || ne.Object != "" ||
			!strings.Contains(err.Error(), "metadata.finalizers") || !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) || len(h.Names()) != 0 {
			t.Errorf("Register(%q) = %v; want an invalid-name error for metadata.finalizers", name, err)
		}
	}
	for _, name := range []string{"cleanup", "example.com/cleanup", "a.b-c/D_e.f"} {
		if err := finalizer.NewHandler(nil).Register(name, noop); err != nil {
			t.Errorf("Register(%q) = %v", name, err)
		}
	}
}
