package testapi

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// ConfigurationOf is obj whole as an apply configuration: every field of
// its Go type, zero ones too, as apimachinery's converter writes them (a
// test's child handed to ownership.Apply), and a function that reads the
// configuration, once applied, back into obj.
func ConfigurationOf(obj client.Object, scheme *runtime.Scheme) (runtime.ApplyConfiguration, func() error, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return nil, nil, err
	}
	u.SetGroupVersionKind(gvk)
	back := func() error { return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj) }
	return client.ApplyConfigurationFromUnstructured(u), back, nil
}
