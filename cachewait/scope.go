package cachewait

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

// WithCacheOptions gives the options the manager's cache was made with
// (ctrl.Options.Cache), so that a write the cache cannot hold is not
// waited for: one in a namespace the cache does not watch, or rejected by
// the label selector (DefaultLabelSelector, ByObject[...].Label, a
// namespace's LabelSelector) or by a field selector on metadata.name or
// metadata.namespace that the cache applies there. The cache never holds
// such a write: a Get of it reads NotFound from the cache, as it would
// without waiting. A write that moves an object the cache held out of its
// selector is waited for until the cache drops the object.
//
// Only what the options certainly exclude is left out: a field selector on
// any other field is taken to match. Without this option, such a write is
// waited for as any other (the cache alone cannot tell "outside my
// selector" from "not seen yet"), and a read that waits for it times out;
// Lists whose own namespace or label selector cannot match it never wait
// for it.
type WithCacheOptions cache.Options

// ApplyToWait implements [WaitOption].
func (w WithCacheOptions) ApplyToWait(o *WaitOptions) {
	c := cache.Options(w)
	o.CacheOptions = &c
}

var _ WaitOption = WithCacheOptions{}

// excludes reports whether a cache made with o certainly does not hold obj
// as it is (its namespace, name and labels). scheme maps the ByObject keys
// to their kinds (nil: o's, else client-go's).
func excludes(o *cache.Options, obj client.Object, scheme *runtime.Scheme) bool {
	if o == nil {
		return false
	}
	scheme = cmp.Or(scheme, o.Scheme, clientgoscheme.Scheme)
	gvk, err := object.GVK(obj, scheme)
	if err != nil {
		return false
	}
	label, field, cached := selectors(o, gvk, obj.GetNamespace(), scheme)
	switch {
	case !cached:
		return true
	case label != nil && !label.Matches(labels.Set(obj.GetLabels())):
		return true
	case field != nil && onMetadataOnly(field):
		return !field.Matches(fields.Set{"metadata.name": obj.GetName(), "metadata.namespace": obj.GetNamespace()})
	}
	return false
}

// selectors returns the label and field selectors (nil: none) a cache made
// with o applies to objects of kind gvk in namespace ("": cluster-scoped),
// and whether it watches that namespace at all. It follows how
// controller-runtime's cache defaults its options: a namespace's own
// settings, then the kind's (ByObject), then DefaultNamespaces' for that
// namespace, then the Default ones; AllNamespaces stands for the
// namespaces not listed.
func selectors(o *cache.Options, gvk schema.GroupVersionKind, namespace string, scheme *runtime.Scheme) (labels.Selector, fields.Selector, bool) {
	var byObject *cache.ByObject
	for key, bo := range o.ByObject {
		if k, err := object.GVK(key, scheme); err == nil && k == gvk {
			byObject = &bo
			break
		}
	}
	var label labels.Selector
	var field fields.Selector
	first := func(l labels.Selector, f fields.Selector) {
		label, field = cmp.Or(label, l), cmp.Or(field, f)
	}
	if namespace != "" {
		namespaces := o.DefaultNamespaces
		if byObject != nil && byObject.Namespaces != nil {
			namespaces = byObject.Namespaces
		}
		if len(namespaces) > 0 {
			key := namespace
			cfg, ok := namespaces[key]
			if !ok {
				key = cache.AllNamespaces
				if cfg, ok = namespaces[key]; !ok {
					return nil, nil, false
				}
			}
			first(cfg.LabelSelector, cfg.FieldSelector)
			if byObject != nil {
				first(byObject.Label, byObject.Field)
			}
			if d, ok := o.DefaultNamespaces[key]; ok {
				first(d.LabelSelector, d.FieldSelector)
			}
			first(o.DefaultLabelSelector, o.DefaultFieldSelector)
			return label, field, true
		}
	}
	if byObject != nil {
		first(byObject.Label, byObject.Field)
	}
	first(o.DefaultLabelSelector, o.DefaultFieldSelector)
	return label, field, true
}

// onMetadataOnly reports whether every requirement of f is on
// metadata.name or metadata.namespace, the fields excludes can evaluate.
func onMetadataOnly(f fields.Selector) bool {
	return !slices.ContainsFunc(f.Requirements(), func(r fields.Requirement) bool {
		return r.Field != "metadata.name" && r.Field != "metadata.namespace"
	})
}
