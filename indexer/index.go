package indexer

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/steadyk8s/steady/internal/identity"
	"github.com/steadyk8s/steady/internal/observe"
)

// Index is a field index over objects of type T, a pointer type such as
// *corev1.Pod. Make one with [New].
type Index[T client.Object] struct {
	name    string
	extract func(T) []string
	// owner marks a [ControllerOwner] index, whose name is its own: what a
	// cache holds under that name is this declaration.
	owner bool
	// mu serialises Register; on holds the field indexers Register added
	// the index to, by identity and without keeping them alive.
	mu sync.Mutex
	on identity.Map[struct{}]
}

// New declares an index named name whose values for an object are what
// extract returns (empty strings are dropped). Declare it once, as a
// package variable.
func New[T client.Object](name string, extract func(T) []string) *Index[T] {
	return &Index[T]{name: name, extract: extract}
}

// Name is the index name, the field of a client.MatchingFields selector.
func (i *Index[T]) Name() string { return i.name }

// values returns the index values of obj, as the cache computes them.
func (i *Index[T]) values(obj T) []string {
	var out []string
	for _, v := range i.extract(obj) {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// Register adds the index to fi, usually mgr.GetFieldIndexer(), before the
// manager starts. Registering the same *Index on the same indexer again is
// a no-op, also when controllers register concurrently: the *Index
// remembers the indexers it was added to, by identity and without keeping
// them alive. Another index with the same name and type (another *Index,
// or one added with fi.IndexField directly) is an error saying it is
// already registered; so is the same *Index again where fi has no identity
// (is not a pointer), as the two cannot be told apart there. A
// [ControllerOwner] index needs no memory: its name is its own, so
// registering it again is a no-op on any fi.
func (i *Index[T]) Register(ctx context.Context, fi client.FieldIndexer) error {
	obj, err := i.newObject()
	if err != nil {
		return err
	}
	switch {
	case i.owner:
		return RegisterControllerOwner(ctx, fi, obj)
	case i.name == controllerOwnerIndex:
		return &conflictError{Index: i.name, Type: fmt.Sprintf("%T", obj)}
	}
	// One registration of i at a time: between a successful IndexField and
	// its record below, the same *Index registered concurrently
	// (controllers set up in parallel) would find the index and no record.
	i.mu.Lock()
	defer i.mu.Unlock()
	if _, ok := i.on.Get(fi); ok {
		return nil
	}
	err = register(ctx, fi, obj, i.name, false, func(o client.Object) []string {
		t, ok := o.(T)
		if !ok {
			return nil
		}
		return i.values(t)
	})
	if err == nil {
		i.on.Update(fi, func(struct{}) struct{} { return struct{}{} })
	}
	return err
}

// register adds the index name over objects of obj's type to fi. The
// cache's "indexer conflict" (the name is taken for that type) is a
// *conflictError, or nothing where own says the name is this index's.
func register(ctx context.Context, fi client.FieldIndexer, obj client.Object, name string, own bool, extract client.IndexerFunc) error {
	err := fi.IndexField(ctx, obj, name, extract)
	switch {
	case err == nil:
		return nil
	case !strings.Contains(err.Error(), "indexer conflict"):
		return fmt.Errorf("indexer: registering %q for %T: %w", name, obj, err)
	case own:
		return nil
	default:
		return &conflictError{Index: name, Type: fmt.Sprintf("%T", obj)}
	}
}

// List lists into list the objects whose index values include value;
// further options (client.InNamespace, say) narrow it, a field selector
// (client.MatchingFields on another index) too: it is ANDed with this one.
// A reader without the index is a *NotRegisteredError.
func (i *Index[T]) List(ctx context.Context, r client.Reader, list client.ObjectList, value string, opts ...client.ListOption) error {
	var zero T
	typ := fmt.Sprintf("%T", zero)
	if any(zero) == nil { // an Index[client.Object]: name the list's type
		typ = fmt.Sprintf("%T", list)
	}
	// A field selector among opts narrows the index's, never replaces it
	// (a MatchingFields option sets the selector whole).
	given := &client.ListOptions{}
	given.ApplyOptions(opts)
	sel := fields.OneTermEqualSelector(i.name, value)
	if given.FieldSelector != nil && !given.FieldSelector.Empty() {
		sel = fields.AndSelectors(sel, given.FieldSelector)
	}
	opts = append(slices.Clone(opts), client.MatchingFieldsSelector{Selector: sel})
	err := observe.Reader(r, "indexer").List(ctx, list, opts...)
	if err == nil {
		return nil
	}
	if !notRegistered(err) {
		return fmt.Errorf("indexer: listing %s by %s=%s: %w", typ, i.name, value, err)
	}
	return &NotRegisteredError{Index: i.name, Type: typ, Err: err}
}

// Find returns the objects whose index values include value, typed. r is
// the manager's cached client or its cache (mgr.GetCache()); scheme, the
// manager's, names T's list type (nil: r's own, when r is a client.Client).
func (i *Index[T]) Find(ctx context.Context, r client.Reader, scheme *runtime.Scheme, value string, opts ...client.ListOption) ([]T, error) {
	var zero T
	if scheme == nil {
		s, ok := r.(interface{ Scheme() *runtime.Scheme })
		if !ok {
			return nil, fmt.Errorf("indexer: finding %T by %s: no scheme given, and the reader (%T) has none", zero, i.name, r)
		}
		scheme = s.Scheme()
	}
	obj, err := i.newObject()
	if err != nil {
		return nil, err
	}
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return nil, fmt.Errorf("indexer: %w", err)
	}
	ro, err := scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return nil, fmt.Errorf("indexer: no list type for %s: %w", gvk, err)
	}
	list, ok := ro.(client.ObjectList)
	if !ok {
		return nil, fmt.Errorf("indexer: %T is not a list", ro)
	}
	if err := i.List(ctx, r, list, value, opts...); err != nil {
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
		strings.Contains(msg, "field label not supported") || strings.Contains(msg, "field selector") ||
		// Jobs: `field label "x" not supported for Job`.
		strings.Contains(msg, "field label") && strings.Contains(msg, "not supported")
}

// newObject returns a new, empty T: an error where T is no pointer to a
// struct (client.Object itself, where New's extract function takes one),
// which names no kind to index.
func (i *Index[T]) newObject() (client.Object, error) {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("indexer: index %q is of %s, which names no kind: give New an extract function of a pointer to the object's type (func(cm *corev1.ConfigMap) []string)", i.name, t)
	}
	return reflect.New(t.Elem()).Interface().(client.Object), nil
}
