package bundle

import (
	"context"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/applyset"

	bundlev1alpha1 "github.com/steadyk8s/steady/examples/bundle/api/v1alpha1"
)

// configMapMissingError says that a ConfigMap (or its key) that a Bundle
// lists does not exist.
type configMapMissingError struct {
	Namespace, Name, Key string
}

func (e *configMapMissingError) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("ConfigMap %s/%s has no key %q", e.Namespace, e.Name, e.Key)
	}
	return fmt.Sprintf("ConfigMap %s/%s not found", e.Namespace, e.Name)
}

// manifests reads and parses every source of the Bundle, in order. A parse
// error is an *applyset.ParseError whose Source names the manifest entry.
func (r *Reconciler) manifests(ctx context.Context, b *bundlev1alpha1.Bundle) ([]*unstructured.Unstructured, error) {
	var all []*unstructured.Unstructured
	for i, m := range b.Spec.Manifests {
		switch {
		case m.ConfigMap != nil:
			cm := &corev1.ConfigMap{}
			err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: m.ConfigMap.Name}, cm)
			if apierrors.IsNotFound(err) {
				return nil, &configMapMissingError{Namespace: b.Namespace, Name: m.ConfigMap.Name}
			}
			if err != nil {
				return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", b.Namespace, m.ConfigMap.Name, err)
			}
			keys := []string{m.ConfigMap.Key}
			if m.ConfigMap.Key == "" {
				keys = keys[:0]
				for k := range cm.Data {
					keys = append(keys, k)
				}
				sort.Strings(keys)
			} else if _, ok := cm.Data[m.ConfigMap.Key]; !ok {
				return nil, &configMapMissingError{Namespace: b.Namespace, Name: m.ConfigMap.Name, Key: m.ConfigMap.Key}
			}
			for _, k := range keys {
				objs, err := parse(cm.Data[k], fmt.Sprintf("spec.manifests[%d]: ConfigMap %s key %s", i, cm.Name, k))
				if err != nil {
					return nil, err
				}
				all = append(all, objs...)
			}
		default:
			objs, err := parse(m.Inline, fmt.Sprintf("spec.manifests[%d].inline", i))
			if err != nil {
				return nil, err
			}
			all = append(all, objs...)
		}
	}
	return all, nil
}

func parse(data, source string) ([]*unstructured.Unstructured, error) {
	objs, err := applyset.ParseYAML([]byte(data))
	var pe *applyset.ParseError
	if errors.As(err, &pe) {
		named := *pe
		named.Source = source
		return nil, &named
	}
	if err != nil {
		// Not a document error: YAML that does not parse at all.
		return nil, &applyset.ParseError{Source: source, Err: err}
	}
	return objs, nil
}

func schemaGK(o bundlev1alpha1.ObjectStatus) schema.GroupKind {
	return schema.GroupKind{Group: o.Group, Kind: o.Kind}
}
