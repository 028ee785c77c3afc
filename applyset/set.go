package applyset

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"

	"github.com/steadyk8s/steady/internal/observe"
)

// Set is an ApplySet: a parent object and the members labelled part of it.
// A Set may be used from several goroutines: its Apply calls run one at a
// time.
type Set struct {
	mu         sync.Mutex // held by Apply for its whole run
	c          client.Client
	parent     *unstructured.Unstructured
	namespaced bool // the parent is namespaced
	o          SetOptions
	live       *unstructured.Unstructured // the parent as last read or written; nil if absent
}

// New returns the Set of parent, which need not exist yet when it is a
// Secret or a ConfigMap.
//
// c must read unstructured objects from the API server: a direct client
// (client.New), or a manager's client with its default options, which reads
// unstructured objects directly and only typed ones from its cache (every
// read of applyset is unstructured). A client that caches unstructured
// objects (client.CacheOptions.Unstructured) could show a stale parent or
// stale members: Apply refuses it with an error before it writes
// anything. The parent's writes also carry the resourceVersion that was
// read, so that a parent changed since fails with a Conflict rather than
// losing group-kinds.
func New(c client.Client, parent client.Object, opts ...SetOption) (*Set, error) {
	o := SetOptions{}
	for _, opt := range opts {
		opt.ApplyToSet(&o)
	}
	if o.FieldManager == "" {
		o.FieldManager = "steady"
	}
	if o.Tooling == "" {
		o.Tooling = defaultTooling
	}
	if o.EstablishTimeout == 0 {
		o.EstablishTimeout = 30 * time.Second
	}
	if !strings.Contains(o.Tooling, "/") {
		return nil, fmt.Errorf("applyset: tooling %q is not name/version", o.Tooling)
	}
	gvk, err := object.GVK(parent, c.Scheme())
	if err != nil {
		return nil, fmt.Errorf("applyset: parent: %w", err)
	}
	p := &unstructured.Unstructured{}
	p.SetGroupVersionKind(gvk)
	p.SetNamespace(parent.GetNamespace())
	p.SetName(parent.GetName())
	namespaced, err := c.IsObjectNamespaced(p)
	if err != nil {
		return nil, fmt.Errorf("applyset: parent %s: %w", idOf(p), err)
	}
	if !namespaced {
		p.SetNamespace("") // not part of a cluster-scoped parent's id
	}
	if namespaced && p.GetNamespace() == "" {
		return nil, fmt.Errorf("applyset: parent %s is namespaced but has no namespace", idOf(p))
	}
	return &Set{c: observe.Client(c, "applyset"), parent: p, namespaced: namespaced, o: o}, nil
}

// ID is the set's applyset.kubernetes.io/id, as kubectl computes it from
// the parent's name, namespace (empty for a cluster-scoped parent), kind and
// group: applyset-<base64url-nopad(sha256("<name>.<namespace>.<kind>.<group>"))>-v1.
func (s *Set) ID() string {
	return id(s.parent.GroupVersionKind().GroupKind(), s.parent.GetNamespace(), s.parent.GetName())
}

// id computes the id of the set whose parent is of kind gk, in namespace
// and named name.
func id(gk schema.GroupKind, namespace, name string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{name, namespace, gk.Kind, gk.Group}, ".")))
	return "applyset-" + base64.RawURLEncoding.EncodeToString(sum[:]) + "-v1"
}

func (s *Set) toolName() string { return toolingName(s.o.Tooling) }

// toolingName is what kubectl compares: everything before the last slash.
func toolingName(t string) string {
	if i := strings.LastIndex(t, "/"); i >= 0 {
		return t[:i]
	}
	return t
}

// idOf is the identity of an unstructured object.
func idOf(u *unstructured.Unstructured) ObjectID {
	return ObjectID{GroupKind: u.GroupVersionKind().GroupKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

var (
	crdGK       = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
	namespaceGK = schema.GroupKind{Kind: "Namespace"}
	crdGVK      = crdGK.WithVersion("v1")
)

// crdKind is the group and kind that crd, a CustomResourceDefinition,
// defines.
func crdKind(crd *unstructured.Unstructured) schema.GroupKind {
	g, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	k, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	return schema.GroupKind{Group: g, Kind: k}
}

// rank orders kinds for apply; prune deletes in reverse.
func rank(gk schema.GroupKind) int {
	switch gk {
	case crdGK:
		return 0
	case namespaceGK:
		return 1
	}
	return 2
}
