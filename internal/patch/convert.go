package patch

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/steadyk8s/steady/internal/object"
)

var (
	objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()
	typeMetaType   = reflect.TypeFor[metav1.TypeMeta]()
)

// toMaps converts the snapshot before and the changed obj to maps, without
// metadata.managedFields, for plan. A top-level field that holds the same
// value in both (the spec of a status write, say) is left out of both: it
// makes no difference, and is not converted twice for nothing. So is each
// metadata field the same in both, but the generation, which plan and body
// read (an unchanged list has nothing to rebase). The roots of condition
// lists are always converted, and so is status when the options make it
// matter (observedGeneration, owned conditions); so is everything when the
// two are not of one type.
//
// What plan and body read of the snapshot map outside the difference is
// only that: metadata.generation, status.observedGeneration and the lists.
func toMaps(before, obj client.Object, o Options) (bm, am map[string]any, err error) {
	// Without options, a status equal in both plans no write (no
	// observedGeneration to set, no owned condition to impose): a
	// finalizer's write leaves it out too.
	statusMatters := o.ObservedGeneration || len(o.OwnedConditions) > 0
	keep := func(field string) bool {
		if field == "status" && statusMatters {
			return true
		}
		for _, p := range o.ConditionLists {
			if len(p) > 0 && p[0] == field {
				return true
			}
		}
		return false
	}
	b, a := before, obj
	if bu, ok := before.(*unstructured.Unstructured); ok {
		if au, ok := obj.(*unstructured.Unstructured); ok {
			b, a = withoutEqualKeys(bu, au, keep)
		}
	} else {
		if bm, am, ok := convertTyped(before, obj, keep); ok {
			return bm, am, nil
		}
		b, a = withoutEqualFields(before, obj, keep)
	}
	if bm, am, err = convertBoth(b, a); err != nil && (b != before || a != obj) {
		// A field left out is converted as its zero value, which its type
		// may refuse to encode (a MarshalJSON that validates): convert the
		// objects whole, as they are.
		return convertBoth(before, obj)
	}
	return bm, am, err
}

func convertBoth(b, a client.Object) (bm, am map[string]any, err error) {
	if bm, err = object.ToMapWithoutManagedFields(b); err != nil {
		return nil, nil, err
	}
	if am, err = object.ToMapWithoutManagedFields(a); err != nil {
		return nil, nil, err
	}
	return bm, am, nil
}

// withoutEqualKeys returns shallow copies of b and a without the top-level
// keys that hold the same JSON in both ([object.SameJSON]: a nil list is
// no empty one), but those keep keeps, or b and a themselves when there
// are none.
func withoutEqualKeys(b, a *unstructured.Unstructured, keep func(string) bool) (client.Object, client.Object) {
	var equal []string
	for k, bv := range b.Object {
		if k == "apiVersion" || k == "kind" || k == "metadata" || keep(k) {
			continue
		}
		if av, ok := a.Object[k]; ok && object.SameJSON(bv, av) {
			equal = append(equal, k)
		}
	}
	bmd, bok := b.Object["metadata"].(map[string]any)
	amd, aok := a.Object["metadata"].(map[string]any)
	var sameMeta []string // metadata keys the same in both, generation aside
	if bok && aok && !keep("metadata") {
		for k, bv := range bmd {
			if av, ok := amd[k]; ok && k != "generation" && object.SameJSON(bv, av) {
				sameMeta = append(sameMeta, k)
			}
		}
	}
	if len(equal) == 0 && len(sameMeta) == 0 {
		return b, a
	}
	bc, ac := maps.Clone(b.Object), maps.Clone(a.Object)
	for _, k := range equal {
		delete(bc, k)
		delete(ac, k)
	}
	if len(sameMeta) > 0 {
		bmd, amd = maps.Clone(bmd), maps.Clone(amd)
		for _, k := range sameMeta {
			delete(bmd, k)
			delete(amd, k)
		}
		bc["metadata"], ac["metadata"] = bmd, amd
	}
	return &unstructured.Unstructured{Object: bc}, &unstructured.Unstructured{Object: ac}
}

// metaPairs holds the pairs of metadata copies convertTyped converts.
var metaPairs = sync.Pool{New: func() any { return new([2]metav1.ObjectMeta) }}

// typedField is a top-level field of a Go struct that convertTyped
// converts on its own: its index and JSON name.
type typedField struct {
	i    int
	name string
}

// typedLayout is what convertTyped reads of a Go struct type, found once
// per type: whether it converts the type field by field (ok), the indices
// of the embedded ObjectMeta and TypeMeta (-1: none), the other top-level
// fields, and which of them is the status (-1: none).
type typedLayout struct {
	ok             bool
	meta, typeMeta int
	fields         []typedField
	status         int // index in fields
	zero           zeroStatus
}

// layouts caches a typedLayout per Go struct type.
var layouts sync.Map // reflect.Type -> *typedLayout

// layoutOf is t's typedLayout.
func layoutOf(t reflect.Type) *typedLayout {
	if l, ok := layouts.Load(t); ok {
		return l.(*typedLayout)
	}
	l := newLayout(t)
	actual, _ := layouts.LoadOrStore(t, l)
	return actual.(*typedLayout)
}

// newLayout scans t, a struct type: ok is false where the struct has a
// field the converter would not give alike on its own (not a struct,
// untagged, inline, omitzero, or with its own conversion: a MarshalJSON),
// or no embedded ObjectMeta.
func newLayout(t reflect.Type) *typedLayout {
	l := &typedLayout{meta: -1, typeMeta: -1, status: -1}
	if value.TypeReflectEntryOf(t).CanConvertToUnstructured() {
		return l
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		switch {
		case f.Anonymous && f.Type == objectMetaType && name == "metadata" && !strings.Contains(opts, "omitzero"):
			l.meta = i
		case f.Anonymous && f.Type == typeMetaType && (tag == ",inline" || tag == ""):
			// Inline either way: k8s.io/api v0.37 embeds it untagged.
			l.typeMeta = i
		case name == "-" && opts == "":
			// never converted
		case f.Anonymous || !f.IsExported() || name == "" || name == "-" || f.Type.Kind() != reflect.Struct ||
			f.Type == objectMetaType || f.Type == typeMetaType ||
			strings.Contains(opts, "omitzero") || value.TypeReflectEntryOf(f.Type).CanConvertToUnstructured(),
			// Two fields under one name (go vet refuses such tags, the
			// converter keeps the later one): leaving out the later one
			// when equal would write the earlier one.
			name == "metadata" || name == "apiVersion" || name == "kind" ||
				slices.ContainsFunc(l.fields, func(g typedField) bool { return g.name == name }):
			return l
		default:
			if name == "status" {
				l.status = len(l.fields)
			}
			l.fields = append(l.fields, typedField{i: i, name: name})
		}
	}
	l.ok = l.meta >= 0
	return l
}

// convertTyped is, for the Go structs b and a (pointers to structs of one
// type), what withoutEqualFields and a whole conversion give, without
// converting what they would convert only to find it equal: each
// top-level field is converted on its own, and one equal in both (and not
// kept) is left out of both maps, not converted to its zero value ({} for
// a spec); so is the type meta when equal. ok is false where the type's
// layout is not converted field by field (see newLayout), or a conversion
// fails: then withoutEqualFields and the whole conversion do it.
func convertTyped(b, a client.Object, keep func(string) bool) (bm, am map[string]any, ok bool) {
	bv, av := reflect.ValueOf(b), reflect.ValueOf(a)
	if bv.Type() != av.Type() || bv.Kind() != reflect.Pointer || bv.IsNil() || av.IsNil() || bv.Elem().Kind() != reflect.Struct {
		return nil, nil, false
	}
	l := layoutOf(bv.Elem().Type())
	if !l.ok {
		return nil, nil, false
	}
	fields, meta, typeMeta := l.fields, l.meta, l.typeMeta
	// Which fields are left out (equal in both, and not kept).
	var room [8]bool
	same := room[:0]
	for _, f := range fields {
		same = append(same, !keep(f.name) && sameField(bv, av, f.i))
	}
	// The metadata, as withoutSameMetadata leaves it (all of it but the
	// managedFields when kept).
	// The two copies come from a pool: they escape to the converter, and
	// were two allocations on every write. What the maps hold is the
	// converter's own (strings are shared, never the metadata's maps or
	// lists), so the copies are cleared and put back once converted.
	metas := metaPairs.Get().(*[2]metav1.ObjectMeta)
	defer func() {
		*metas = [2]metav1.ObjectMeta{}
		metaPairs.Put(metas)
	}()
	bmd, amd := &metas[0], &metas[1]
	*bmd = *bv.Elem().Field(meta).Addr().Interface().(*metav1.ObjectMeta)
	*amd = *av.Elem().Field(meta).Addr().Interface().(*metav1.ObjectMeta)
	if keep("metadata") {
		bmd.ManagedFields, amd.ManagedFields = nil, nil
	} else {
		withoutSameMetadata(bmd, amd)
	}
	sameType := typeMeta >= 0 && sameField(bv, av, typeMeta)
	convert := func(v reflect.Value, md *metav1.ObjectMeta) (map[string]any, error) {
		m := make(map[string]any, len(fields)+3)
		if typeMeta >= 0 && !sameType {
			tm := v.Elem().Field(typeMeta).Addr().Interface().(*metav1.TypeMeta)
			if tm.APIVersion != "" {
				m["apiVersion"] = tm.APIVersion
			}
			if tm.Kind != "" {
				m["kind"] = tm.Kind
			}
		}
		c, err := object.ToUnstructured(md)
		if err != nil {
			return nil, err
		}
		m["metadata"] = c
		for j, f := range fields {
			if same[j] {
				continue
			}
			if c, err = object.ToUnstructured(v.Elem().Field(f.i).Addr().Interface()); err != nil {
				return nil, err
			}
			m[f.name] = c
		}
		return m, nil
	}
	var err error
	if bm, err = convert(bv, bmd); err != nil {
		return nil, nil, false
	}
	if am, err = convert(av, amd); err != nil {
		return nil, nil, false
	}
	return bm, am, true
}

// withoutEqualFields returns shallow copies of the Go structs b and a with
// the exported top-level fields that hold equal values in both (but the
// embedded ones, and those keep keeps, by JSON name) set to their zero
// value, the embedded TypeMeta too (no write sends apiVersion and kind),
// and the same fields of the embedded ObjectMeta cleared
// (withoutSameMetadata), or b and a themselves when there are none or they
// are not pointers to structs of one type.
func withoutEqualFields(b, a client.Object, keep func(string) bool) (client.Object, client.Object) {
	bv, av := reflect.ValueOf(b), reflect.ValueOf(a)
	if bv.Type() != av.Type() || bv.Kind() != reflect.Pointer || bv.IsNil() || av.IsNil() || bv.Elem().Kind() != reflect.Struct {
		return b, a
	}
	t := bv.Elem().Type()
	var room [8]int
	equal := room[:0]
	meta := -1 // the embedded ObjectMeta
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type == objectMetaType && !keep("metadata") {
			meta = i
			continue
		}
		if f.Anonymous && f.Type == typeMetaType {
			// apiVersion and kind: no write sends them.
			if sameField(bv, av, i) {
				equal = append(equal, i)
			}
			continue
		}
		if f.Anonymous || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || keep(name) {
			continue
		}
		if sameField(bv, av, i) {
			equal = append(equal, i)
		}
	}
	if len(equal) == 0 && meta < 0 {
		return b, a
	}
	copyWithout := func(v reflect.Value) (client.Object, *metav1.ObjectMeta, bool) {
		c := reflect.New(t)
		c.Elem().Set(v.Elem())
		for _, i := range equal {
			c.Elem().Field(i).SetZero()
		}
		var m *metav1.ObjectMeta
		if meta >= 0 {
			m = c.Elem().Field(meta).Addr().Interface().(*metav1.ObjectMeta)
		}
		obj, ok := c.Interface().(client.Object)
		return obj, m, ok
	}
	bc, bm, bok := copyWithout(bv)
	ac, am, aok := copyWithout(av)
	if !bok || !aok {
		return b, a
	}
	if bm != nil && am != nil {
		withoutSameMetadata(bm, am)
	}
	return bc, ac
}

// withoutSameMetadata clears in b and a, copies of the snapshot's and the
// object's metadata, every field that is the same in both (nil and empty
// alike where the JSON omits both), but the generation, which plan and
// body read: what is left is the difference, which plan diffs, and the
// lists that changed, which it rebases. managedFields go too (never
// compared, never written).
func withoutSameMetadata(b, a *metav1.ObjectMeta) {
	b.ManagedFields, a.ManagedFields = nil, nil
	str := func(x, y *string) {
		if *x == *y {
			*x, *y = "", ""
		}
	}
	str(&b.Name, &a.Name)
	str(&b.GenerateName, &a.GenerateName)
	str(&b.Namespace, &a.Namespace)
	str(&b.SelfLink, &a.SelfLink)
	str(&b.ResourceVersion, &a.ResourceVersion)
	if b.UID == a.UID {
		b.UID, a.UID = "", ""
	}
	if b.CreationTimestamp.Equal(&a.CreationTimestamp) {
		b.CreationTimestamp, a.CreationTimestamp = metav1.Time{}, metav1.Time{}
	}
	if b.DeletionTimestamp.Equal(a.DeletionTimestamp) {
		b.DeletionTimestamp, a.DeletionTimestamp = nil, nil
	}
	if (b.DeletionGracePeriodSeconds == nil) == (a.DeletionGracePeriodSeconds == nil) &&
		(b.DeletionGracePeriodSeconds == nil || *b.DeletionGracePeriodSeconds == *a.DeletionGracePeriodSeconds) {
		b.DeletionGracePeriodSeconds, a.DeletionGracePeriodSeconds = nil, nil
	}
	if maps.Equal(b.Labels, a.Labels) {
		b.Labels, a.Labels = nil, nil
	}
	if maps.Equal(b.Annotations, a.Annotations) {
		b.Annotations, a.Annotations = nil, nil
	}
	if slices.Equal(b.Finalizers, a.Finalizers) {
		b.Finalizers, a.Finalizers = nil, nil
	}
	if reflect.DeepEqual(b.OwnerReferences, a.OwnerReferences) {
		b.OwnerReferences, a.OwnerReferences = nil, nil
	}
}

// sameField reports whether field i of the structs b and a point to holds
// equal values, compared through pointers (boxing the values would copy
// them).
func sameField(b, a reflect.Value, i int) bool {
	return reflect.DeepEqual(b.Elem().Field(i).Addr().Interface(), a.Elem().Field(i).Addr().Interface())
}
