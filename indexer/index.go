package indexer

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Index is a field index over objects of type T, a pointer type such as
// *corev1.Pod. Make one with [New].
type Index[T client.Object] struct {
	name    string
	extract func(T) []string
}

// New declares an index named name whose values for an object are what
// extract returns (empty strings are dropped). Declare it once, as a
// package variable.
func New[T client.Object](name string, extract func(T) []string) *Index[T] {
	return &Index[T]{name: name, extract: extract}
}

// Name is the index name, the field of a client.MatchingFields selector.
func (i *Index[T]) Name() string { return i.name }

// Values returns the index values of obj, as the cache computes them.
func (i *Index[T]) Values(obj T) []string {
	var out []string
	for _, v := range i.extract(obj) {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// registry remembers which declaration each cache has under each name and
// type, so that registering the same one twice is harmless.
var registry = struct {
	sync.Mutex
	m map[registryKey]any
}{m: map[registryKey]any{}}

type registryKey struct {
	cache uintptr
	typ   reflect.Type
	name  string
}

// Register adds the index to fi, usually mgr.GetFieldIndexer(), before the
// manager starts. Registering the same *Index again is a no-op; another
// *Index with the same name and type is a [*ConflictError].
func (i *Index[T]) Register(ctx context.Context, fi client.FieldIndexer) error {
	var zero T
	typ := reflect.TypeOf(zero)
	key, dedupe := registryKey{typ: typ, name: i.name}, false
	if v := reflect.ValueOf(fi); v.Kind() == reflect.Pointer {
		key.cache, dedupe = v.Pointer(), true
	}
	if dedupe {
		registry.Lock()
		defer registry.Unlock()
		if prev, ok := registry.m[key]; ok {
			if prev == any(i) {
				return nil
			}
			return &ConflictError{Index: i.name, Type: typ.String()}
		}
	}
	obj := reflect.New(typ.Elem()).Interface().(client.Object)
	err := fi.IndexField(ctx, obj, i.name, func(o client.Object) []string {
		t, ok := o.(T)
		if !ok {
			return nil
		}
		return i.Values(t)
	})
	if err != nil {
		if strings.Contains(err.Error(), "indexer conflict") {
			return &ConflictError{Index: i.name, Type: typ.String()}
		}
		return fmt.Errorf("indexer: registering %q for %s: %w", i.name, typ, err)
	}
	if dedupe {
		registry.m[key] = i
	}
	return nil
}

// List lists into list the objects whose index values include value;
// further options (client.InNamespace, say) narrow it.
func (i *Index[T]) List(ctx context.Context, r client.Reader, list client.ObjectList, value string, opts ...client.ListOption) error {
	opts = append([]client.ListOption{client.MatchingFields{i.name: value}}, opts...)
	if err := r.List(ctx, list, opts...); err != nil {
		var zero T
		if notRegistered(err) {
			return &NotRegisteredError{Index: i.name, Type: fmt.Sprintf("%T", zero), Err: err}
		}
		return fmt.Errorf("indexer: listing %T by %s=%s: %w", zero, i.name, value, err)
	}
	return nil
}

// Find returns the objects whose index values include value, typed.
func (i *Index[T]) Find(ctx context.Context, c client.Client, value string, opts ...client.ListOption) ([]T, error) {
	var zero T
	obj := reflect.New(reflect.TypeOf(zero).Elem()).Interface().(client.Object)
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return nil, fmt.Errorf("indexer: %w", err)
	}
	ro, err := c.Scheme().New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return nil, fmt.Errorf("indexer: no list type for %s: %w", gvk, err)
	}
	list, ok := ro.(client.ObjectList)
	if !ok {
		return nil, fmt.Errorf("indexer: %T is not a list", ro)
	}
	if err := i.List(ctx, c, list, value, opts...); err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("indexer: %w", err)
	}
	out := make([]T, 0, len(items))
	for _, it := range items {
		if t, ok := it.(T); ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// notRegistered recognises the errors of a reader that has no such index:
// the cache's "index with name ... does not exist", or the API server's
// refusal of an unknown field selector.
func notRegistered(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "index with name") && strings.Contains(msg, "does not exist") ||
		strings.Contains(msg, "field label not supported") || strings.Contains(msg, "field selector")
}
