package finalizer_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/internal/testapi"
)

// TestBadFinalizerNames: a name the API server would refuse in
// metadata.finalizers is a *finalizer.NameError naming the field (and the
// object, from Ensure), from Register and from Ensure, which leaves the
// object as it was, deleting or not. (reconcile's TestPatchBadInput shows
// the Patcher refusing it before any write.)
func TestBadFinalizerNames(t *testing.T) {
	noop := finalizer.Func(func(context.Context, client.Object) error { return nil })
	now := metav1.Now()
	for _, name := range []string{"", "Not A Name!", "a/b/c", "example.com/" + strings.Repeat("x", 64), "-cleanup", "example..com/x"} {
		h := finalizer.NewHandler(nil)
		err := h.Register(name, noop)
		var ne *finalizer.NameError
		if !errors.As(err, &ne) || ne.Finalizer != name || ne.Field != "metadata.finalizers" || ne.Object != "" ||
			!strings.Contains(err.Error(), "metadata.finalizers") || len(h.Names()) != 0 {
			t.Errorf("Register(%q) = %v; want a *NameError for metadata.finalizers", name, err)
		}
		for _, deleting := range []*metav1.Time{nil, &now} {
			w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", Finalizers: []string{"other.example.com/keep"}, DeletionTimestamp: deleting}}
			changed, err := finalizer.Ensure(w, name)
			if !errors.As(err, &ne) || changed || ne.Object != "Widget ns/w" || !strings.Contains(err.Error(), "Widget ns/w") ||
				!slices.Equal(w.Finalizers, []string{"other.example.com/keep"}) {
				t.Errorf("Ensure(%q), deleting %v = %v, %v, finalizers %v; want a *NameError naming Widget ns/w, no change", name, deleting != nil, changed, err, w.Finalizers)
			}
		}
	}
	for _, name := range []string{"cleanup", "example.com/cleanup", "a.b-c/D_e.f"} {
		if err := finalizer.NewHandler(nil).Register(name, noop); err != nil {
			t.Errorf("Register(%q) = %v", name, err)
		}
	}
}
