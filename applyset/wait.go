package applyset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/backoff"
)

// mapLate waits, when a CRD of the set was written or defines a kind not
// served yet, until every CRD of the set is established, and maps the
// members of the kinds they define.
func (r *run) mapLate(ctx context.Context, members, crds []*member) error {
	if !slices.ContainsFunc(members, func(m *member) bool { return m.mapping == nil || (m.id.GroupKind == crdGK && m.changed) }) {
		return nil
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, r.s.o.EstablishTimeout)
	defer cancel()
	readCRD := func(ctx context.Context, name string) (*unstructured.Unstructured, error) {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(crdGVK)
		return crd, r.s.c.Get(ctx, client.ObjectKey{Name: name}, crd)
	}
	for _, m := range crds {
		for {
			if crd, err := readCRD(ctx, m.id.Name); err == nil && established(crd) {
				break
			}
			if backoff.Sleep(ctx, 50*time.Millisecond) == nil {
				continue
			}
			// Time is up: one last read, on the caller's context, says
			// why.
			crd, err := readCRD(parent, m.id.Name)
			if err == nil && established(crd) {
				break
			}
			if msg := condition(crd, "NamesAccepted", "False"); err == nil && msg != "" {
				// Its names clash with another CRD's: it will not be
				// established until the input changes.
				return &ValidationError{Errors: []error{&ObjectError{Index: m.index, ID: m.id, Field: "spec.names",
					Err: fmt.Errorf("not established within %s: NamesAccepted is False: %s", r.s.o.EstablishTimeout, msg)}}, Written: r.written}
			}
			return fmt.Errorf("applyset: CRD %s not established (%s): %w", m.id.Name, writtenBefore(r.written), errors.Join(ctx.Err(), err))
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
			if backoff.Sleep(ctx, 100*time.Millisecond) != nil {
				if meta.IsNoMatchError(err) && !discoveryFailed(err) && parent.Err() == nil {
					// The CRDs are established and do not define it.
					return &ValidationError{Errors: []error{&ObjectError{Index: m.index, ID: m.id, Field: "kind", Err: err}}, Written: r.written}
				}
				// Discovery failed, or the caller gave up: not a refusal.
				return fmt.Errorf("applyset: mapping %s failed (%s): %w", m.id, writtenBefore(r.written), err)
			}
		}
	}
	return nil
}

func established(crd *unstructured.Unstructured) bool {
	return condition(crd, "Established", "True") != ""
}

// condition returns the message of obj's condition of type t when its
// status is status (a space when it has no message), "" otherwise.
func condition(obj *unstructured.Unstructured, t, status string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == t && m["status"] == status {
			if msg, _ := m["message"].(string); msg != "" {
				return msg
			}
			return " "
		}
	}
	return ""
}

// writtenBefore says what an Apply wrote before it failed.
func writtenBefore(written []string) string {
	if len(written) == 0 {
		return "nothing written"
	}
	return "written before: " + strings.Join(written, ", ")
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
		if backoff.Sleep(ctx, 200*time.Millisecond) != nil {
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
