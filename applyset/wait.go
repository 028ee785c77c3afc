package applyset

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// mapLate waits, when a CRD of the set was written or defines a kind not
// served yet, until every CRD of the set is established, and maps the
// members of the kinds they define.
func (r *run) mapLate(ctx context.Context, members, crds []*member) error {
	need := false
	for _, m := range members {
		need = need || m.mapping == nil || (m.id.GroupKind == crdGK && m.changed)
	}
	if !need {
		return nil
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, r.s.o.EstablishTimeout)
	defer cancel()
	for _, m := range crds {
		for {
			crd := &unstructured.Unstructured{}
			crd.SetGroupVersionKind(crdGVK)
			if err := r.s.c.Get(ctx, client.ObjectKey{Name: m.id.Name}, crd); err == nil && established(crd) {
				break
			}
			if err := pause(ctx, 50*time.Millisecond); err != nil {
				return fmt.Errorf("applyset: CRD %s not established: %w", m.id.Name, err)
			}
		}
	}
	for _, m := range members {
		for m.mapping == nil {
			gvk := m.obj.GroupVersionKind()
			mapping, err := r.s.c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
			if err == nil {
				m.mapping = mapping
				break
			}
			if pause(ctx, 100*time.Millisecond) != nil {
				if meta.IsNoMatchError(err) && !discoveryFailed(err) && parent.Err() == nil {
					// The CRDs are established and do not define it.
					return &ValidationError{Errors: []error{fmt.Errorf("%s: %w", m.id, err)}, Written: r.written}
				}
				// Discovery failed, or the caller gave up: not a refusal.
				return fmt.Errorf("applyset: mapping %s failed (written before: %s): %w", m.id, strings.Join(r.written, ", "), err)
			}
		}
	}
	return nil
}

func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// waitCurrent polls the members until kstatus finds them all Current: one
// LIST per kind and namespace that still has a member not Current, and only
// those members are computed again.
func (r *run) waitCurrent(ctx context.Context, members []*member) error {
	ctx, cancel := context.WithTimeout(ctx, r.s.o.CurrentTimeout)
	defer cancel()
	pending := map[listKey]map[string]*member{}
	for _, m := range members {
		k := listKey{m.id.GroupKind, m.id.Namespace}
		if pending[k] == nil {
			pending[k] = map[string]*member{}
		}
		pending[k][m.id.Name] = m
	}
	notCurrent := map[string]string{}
	for {
		for k, ms := range pending {
			var mapping = firstMapping(ms)
			items, err := r.s.listMembers(ctx, mapping, k.namespace)
			if err != nil {
				for _, m := range ms {
					notCurrent[m.id.String()] = err.Error()
				}
				continue
			}
			seen := sets.New[string]()
			for _, live := range items {
				m, ok := ms[live.GetName()]
				if !ok {
					continue
				}
				seen.Insert(live.GetName())
				st, err := status.Compute(live)
				switch {
				case err != nil:
					notCurrent[m.id.String()] = err.Error()
				case st.Status != status.CurrentStatus:
					notCurrent[m.id.String()] = st.Status.String() + ": " + st.Message
				default:
					delete(notCurrent, m.id.String())
					delete(ms, live.GetName())
				}
			}
			for name, m := range ms {
				if !seen.Has(name) {
					notCurrent[m.id.String()] = "not found"
				}
			}
			if len(ms) == 0 {
				delete(pending, k)
			}
		}
		if len(pending) == 0 {
			return nil
		}
		if pause(ctx, 200*time.Millisecond) != nil {
			return &NotCurrentError{Objects: notCurrent}
		}
	}
}

func firstMapping(ms map[string]*member) *meta.RESTMapping {
	for _, m := range ms {
		return m.mapping
	}
	return nil
}
