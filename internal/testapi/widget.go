// Package testapi holds what steady's own envtest suites share: a small
// custom resource, Widget, with a status subresource and conditions, and a
// transport that counts API requests per verb.
package testapi

import (
	"embed"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/steadyk8s/steady/testenv"
)

// CRDs holds widgets.test.steady.dev, for testenv.WithCRDs{FS: CRDs, Paths: []string{"crds"}}.
//
//go:embed crds/*.yaml
var CRDs embed.FS

// GroupVersion is the API group of Widget.
var GroupVersion = schema.GroupVersion{Group: "test.steady.dev", Version: "v1"}

// AddToScheme registers Widget and WidgetList.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Widget{}, &WidgetList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// Widget is a namespaced test object with spec, status and conditions.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec   `json:"spec,omitempty"`
	Status            WidgetStatus `json:"status,omitempty"`
}

// WidgetSpec is the desired state.
type WidgetSpec struct {
	Size  int    `json:"size,omitempty"`
	Color string `json:"color,omitempty"`
	Owner string `json:"owner,omitempty"`
}

// WidgetStatus is the observed state.
type WidgetStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Phase              string             `json:"phase,omitempty"`
	Replicas           int                `json:"replicas,omitempty"`
	Namespaces         []string           `json:"namespaces,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// GetConditions returns the status conditions.
func (w *Widget) GetConditions() []metav1.Condition { return w.Status.Conditions }

// SetConditions sets the status conditions.
func (w *Widget) SetConditions(c []metav1.Condition) { w.Status.Conditions = c }

// DeepCopyObject implements runtime.Object.
func (w *Widget) DeepCopyObject() runtime.Object { return w.DeepCopy() }

// DeepCopy copies the Widget.
func (w *Widget) DeepCopy() *Widget {
	if w == nil {
		return nil
	}
	out := &Widget{TypeMeta: w.TypeMeta, Spec: w.Spec, Status: w.Status}
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Status.Namespaces = append([]string(nil), w.Status.Namespaces...)
	if w.Status.Conditions != nil {
		out.Status.Conditions = make([]metav1.Condition, len(w.Status.Conditions))
		for i := range w.Status.Conditions {
			w.Status.Conditions[i].DeepCopyInto(&out.Status.Conditions[i])
		}
	}
	return out
}

// WidgetList is a list of Widgets.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (l *WidgetList) DeepCopyObject() runtime.Object {
	out := &WidgetList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	for i := range l.Items {
		out.Items = append(out.Items, *l.Items[i].DeepCopy())
	}
	return out
}

// Scheme returns a scheme with client-go's types and Widget.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(AddToScheme(s))
	return s
}

// NewEnv returns a test control plane with the Widget CRD and [Scheme].
func NewEnv(opts ...testenv.Option) *testenv.Environment {
	return testenv.New(append([]testenv.Option{testenv.WithCRDs{FS: CRDs, Paths: []string{"crds"}}, testenv.WithScheme{Scheme: Scheme()}}, opts...)...)
}
