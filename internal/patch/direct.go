package patch

import (
	"math"
	"reflect"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

// A direct write is the first attempt of a write that plan and body give
// from the Go values alone, without converting the snapshot and the object
// to maps: the two writes that take a new object to its steady state.
//
//   - Finalizers: the object differs from the snapshot only in
//     metadata.finalizers (finalizer.Handler adding one), with no option
//     that touches status.
//   - A first status: the snapshot's status is empty (the zero value of
//     its Go type) and only status differs, or only observedGeneration is
//     to be set (the Patcher's write on a new object).
//
// The body is the one plan and body would send on the snapshot
// (TestDirectWritesAsThePlan compares them over random objects and
// options); where anything is unusual (an unstructured object, a layout
// convertTyped does not take, another field changed too, a removal of a
// map, a list whose order alone changed, a snapshot's status holding a
// -0, no body left) there is no direct write and the engine plans as
// always. A later attempt (after a conflict, or a status written with the
// object) is planned by the engine: fillDirect.

// zeroStatus is a Go type's zero status, converted once: what a first
// status write is diffed against.
type zeroStatus struct {
	once sync.Once
	// m is the converted zero status without its conditions (read only);
	// nil where there is none to use: the conversion failed, or the zero
	// value has conditions that are not null (a list plan rebases from
	// what it holds, or anything else, which it diffs as a field).
	m map[string]any
	// floats: the status holds a float or complex number by value, which
	// reflect's IsZero takes for zero at -0 (see negativeZero).
	floats bool
}

// get converts t's zero value once.
func (z *zeroStatus) get(t reflect.Type) map[string]any {
	z.once.Do(func() {
		z.floats = holdsFloat(t)
		m, err := object.ToUnstructured(reflect.New(t).Interface())
		if err != nil {
			return
		}
		if c, has := m["conditions"]; has {
			if !object.IsNull(c) {
				return
			}
			delete(m, "conditions")
		}
		z.m = m
	})
	return z.m
}

// holdsFloat reports whether a value of t holds a float or complex number
// by value (itself, a field, an array element: not behind a pointer, a
// slice, a map or an interface, which a zero value holds none of).
func holdsFloat(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return holdsFloat(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if holdsFloat(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// negativeZero reports whether v holds a -0 by value: reflect's IsZero
// takes it for 0, but a type that converts itself may write it otherwise
// ("-0"), so a status holding one is not the zero status converted.
func negativeZero(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		return math.Signbit(v.Float())
	case reflect.Complex64, reflect.Complex128:
		c := v.Complex()
		return math.Signbit(real(c)) || math.Signbit(imag(c))
	case reflect.Array:
		for i := range v.Len() {
			if negativeZero(v.Index(i)) {
				return true
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if negativeZero(v.Field(i)) {
				return true
			}
		}
	}
	return false
}

// planDirect compares the Go values of before and obj (only reads them)
// and returns the part for a direct write of the change, its first body
// set; same where they are equal, and with ObservedGeneration the
// observedGeneration is current, as unchanged has it. compared is false where
// it could not tell (an unstructured object, a layout convertTyped does
// not take): unchanged and the engine decide. Else, with neither a part
// nor same, the engine plans the write.
func (w *Writer) planDirect(before, obj client.Object, o Options) (p *part, compared, same bool) {
	if w.engineOnly || len(o.ConditionLists) > 0 {
		return nil, false, false
	}
	bv, av := reflect.ValueOf(before), reflect.ValueOf(obj)
	if bv.Type() != av.Type() || bv.Kind() != reflect.Pointer || bv.IsNil() || av.IsNil() || bv.Elem().Kind() != reflect.Struct {
		return nil, false, false
	}
	l := layoutOf(bv.Elem().Type())
	if !l.ok {
		return nil, false, false
	}
	bmd := bv.Elem().Field(l.meta).Addr().Interface().(*metav1.ObjectMeta)
	amd := av.Elem().Field(l.meta).Addr().Interface().(*metav1.ObjectMeta)
	finalizers, rest := object.MetaDiff(bmd, amd)
	if rest {
		return nil, true, false
	}
	statusSame := true
	for j, f := range l.fields {
		if sameField(bv, av, f.i) {
			continue
		}
		if j != l.status {
			return nil, true, false // the spec, or another field
		}
		statusSame = false
	}
	// Same as unchanged has it: the type meta and the managedFields too,
	// which no write sends (where only they differ, the engine decides, as
	// before direct writes: it writes an observedGeneration of 0 that the
	// converter omitted).
	if !finalizers && statusSame && (l.typeMeta < 0 || sameField(bv, av, l.typeMeta)) &&
		reflect.DeepEqual(&bmd.ManagedFields, &amd.ManagedFields) {
		if !o.ObservedGeneration {
			return nil, true, true
		}
		if og, ok := observedGeneration(obj); ok && og == obj.GetGeneration() {
			return nil, true, true
		}
	}
	gen := bmd.Generation
	switch {
	case finalizers && statusSame && !o.ObservedGeneration && len(o.OwnedConditions) == 0:
		return directFinalizers(bmd.Finalizers, amd.Finalizers, gen), true, false
	case !finalizers && l.status >= 0:
		st := bv.Elem().Field(l.fields[l.status].i)
		if !st.IsZero() {
			return nil, true, false
		}
		zero := l.zero.get(st.Type())
		if zero == nil || l.zero.floats && negativeZero(st) {
			return nil, true, false
		}
		return directStatus(zero, av.Elem().Field(l.fields[l.status].i).Addr().Interface(), gen, obj.GetGeneration(), o), true, false
	}
	return nil, true, false
}

// stringList is a string list as a JSON list (nil for an empty one, which
// the converter omits).
func stringList(s []string) []any {
	if len(s) == 0 {
		return nil
	}
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// directFinalizers is the finalizers' write: the list rebased on the
// snapshot's (which is what the live object has on the first attempt):
// after's entries, each once, in after's order; locked.
func directFinalizers(before, after []string, gen int64) *part {
	l := list{path: finalizersPath, key: stringKey, before: stringList(before), after: stringList(after)}
	if !l.changed() {
		return nil
	}
	out := firstByKey(l.after, l.key)
	if equalList(out, l.before) || sameEntries(out, l.before, l.key) {
		return nil // an order alone: no write, as body has it
	}
	p := &part{gen: gen, direct: true, first: true, firstLock: true}
	if len(out) > 0 {
		p.finalizers = out
	}
	return p
}

// firstByKey is items without the entries whose key an earlier entry
// has: what rebase makes of a list where the snapshot's was empty, or held
// only entries that items keeps (every entry is then ours, or the
// snapshot's own).
func firstByKey(items []any, key func(any) string) []any {
	out := make([]any, 0, len(items))
	var room [8]string
	keys := room[:0]
	for _, it := range items {
		k := key(it)
		if slices.Contains(keys, k) {
			continue
		}
		keys = append(keys, k)
		out = append(out, it)
	}
	return out
}

// directStatus is the first status write: the object's status (after, a
// pointer to it) diffed against zero, the converted zero status, its
// conditions added as a list; locked on the resourceVersion as every
// status write is. gen is the snapshot's generation, observed the
// object's GetGeneration (what plan sets status.observedGeneration to).
func directStatus(zero map[string]any, after any, gen, observed int64, o Options) *part {
	a, err := object.ToUnstructured(after)
	if err != nil {
		return nil
	}
	if o.ObservedGeneration {
		a["observedGeneration"] = observed
	}
	var conds []any
	if c, has := a["conditions"]; has {
		list, isList := c.([]any)
		if !isList && !object.IsNull(c) {
			return nil // not a list there: plan diffs it as a field
		}
		conds = list
		delete(a, "conditions")
	}
	snap := map[string]any{"status": zero}
	var body map[string]any
	if len(zero) == 0 {
		// What mergeDiff gives against nothing, without copying a, which
		// is this call's own.
		body = map[string]any{"status": a}
		prune(body, snap)
	} else if body, err = mergeDiff(snap, map[string]any{"status": a}); err != nil {
		return nil
	}
	if object.CheckJSON(body) != nil {
		return nil
	}
	var drops part
	if drops.collectDrops(body, snap, nil); len(drops.drops) > 0 {
		return nil
	}
	lock := false
	l := list{path: conditionsPath, key: typeKey, owned: ownedSet(o.OwnedConditions), conditions: true, after: conds}
	if l.changed() || l.hasOwned() {
		if out := firstByKey(conds, l.key); len(out) > 0 {
			if err := setList(body, snap, out, conditionsPath); err != nil {
				return nil
			}
			lock = true
		}
	}
	dropApplied(body, snap)
	sb, _ := body["status"].(map[string]any)
	if len(body) != 1 || len(sb) == 0 {
		return nil
	}
	return &part{status: true, gen: gen, direct: true, first: true, firstLock: lock, statusBody: sb}
}

// emptyStatusBase is Result.StatusBase for a first status write: the
// snapshot had no status (shared: only read).
var emptyStatusBase = map[string]any{"status": map[string]any{}}

// encodeFirst is the body of p's first attempt: its finalizers or its
// status, with the preconditions: uid where not empty, and resourceVersion
// rv where lockRV; the bytes MarshalJSON gives the body as a map.
func (p *part) encodeFirst(uid, rv string, lockRV bool) ([]byte, error) {
	return object.Encode(func(b []byte) ([]byte, error) {
		b = append(b, '{')
		var err error
		if meta := !p.status || lockRV || uid != ""; meta {
			b = append(b, `"metadata":{`...)
			n := 0
			field := func(name string, v any) {
				if err != nil {
					return
				}
				if n > 0 {
					b = append(b, ',')
				}
				n++
				b = append(append(append(b, '"'), name...), `":`...)
				b, err = object.AppendJSON(b, v)
			}
			if !p.status {
				field("finalizers", p.finalizers)
			}
			if lockRV {
				field("resourceVersion", rv)
			}
			if uid != "" {
				field("uid", uid)
			}
			b = append(b, '}')
			if p.status {
				b = append(b, ',')
			}
		}
		if p.status && err == nil {
			b = append(b, `"status":`...)
			b, err = object.AppendJSON(b, p.statusBody)
		}
		return append(b, '}'), err
	})
}

// fillDirect plans p, a direct write, from maps, as Patch plans any
// write, for the attempts after its first (st: the state of the write; a
// snapshot map for it where no answer or re-read replaced it).
func fillDirect(p *part, before, obj client.Object, st *state, o Options) error {
	bm, am, err := toMaps(before, obj, o)
	if err != nil {
		return err
	}
	parts, err := plan(bm, am, obj, o)
	if err != nil {
		return err
	}
	if len(parts) != 1 || parts[0].status != (p.status || p.fallback) || parts[0].rest != nil {
		return errDirectPlan
	}
	q := parts[0]
	p.diff, p.lists, p.drops, p.gen = q.diff, q.lists, q.drops, q.gen
	if st.m == nil && st.obj == nil {
		st.m = bm
	}
	return nil
}
