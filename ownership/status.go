package ownership

import (
	"context"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
	"github.com/steadyk8s/steady/internal/scope"
)

// factStatus is the fact a State learns of a kind (see [scope.State.Learn])
// when an update of CreateOrUpdate finds it with a status subresource
// (true) or without one (false) (see learnStatusSubresource):
// CreateOrUpdate does not compare the status of a kind with one, which its
// update cannot write. A kind is known per cluster (the State of c's): one CRD may have a
// status subresource in one cluster of a fleet and none in another.
const factStatus = scope.FactStatusSubresource

// learnStatusSubresource learns from the answer to an update of an object
// whose status live was (the update was locked on live's resourceVersion)
// and want asked for, whether its kind has a status
// subresource: an update that changed the status has none; one that kept
// the status live had when want asked for another one has one, which
// holds for a kind known to the scheme (a Go type: no field of want's
// status is pruned), or when the answer kept a value of live's that want
// set to another one (for a custom resource without a Go type, whose
// schema may prune fields want sets).
func learnStatusSubresource(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, live, want, answer map[string]any) {
	switch {
	case !equalStatus(answer["status"], live["status"]):
		scope.Of(ctx, c).Learn(gvk, factStatus, false)
	case equalStatus(want["status"], live["status"]):
	case c.Scheme().Recognizes(gvk) || keptAgainst(answer["status"], want["status"]):
		scope.Of(ctx, c).Learn(gvk, factStatus, true)
	}
}

// keptAgainst reports whether answer holds a value where want holds
// another one (not where want holds nothing, or answer nothing).
func keptAgainst(answer, want any) bool {
	a, aok := answer.(map[string]any)
	w, wok := want.(map[string]any)
	if !aok || !wok {
		return answer != nil && want != nil && !reflect.DeepEqual(answer, want)
	}
	for k, wv := range w {
		if av, ok := a[k]; ok && keptAgainst(av, wv) {
			return true
		}
	}
	return false
}

// conflict is the conflict error of a write not made because child changed
// since it was read.
func conflict(c client.Client, child client.Object, err error) error {
	gvk, gerr := object.GVK(child, c.Scheme())
	gr := schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}
	if gerr == nil {
		if m, merr := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); merr == nil {
			gr = m.Resource.GroupResource()
		}
	}
	return apierrors.NewConflict(gr, child.GetName(), err)
}
