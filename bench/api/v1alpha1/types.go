// Package v1alpha1 is the bench.steady.dev/v1alpha1 API of the benchmark
// operator: a namespaced Team that gets a ConfigMap, a ServiceAccount and a
// RoleBinding of its own. The three variants of the operator (steady,
// hand-written controller-runtime, cluster-api's patch helper) reconcile the
// same kind, each in namespaces of its own.
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "bench.steady.dev", Version: "v1alpha1"}

	// SchemeBuilder registers this API's types.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() { SchemeBuilder.Register(&Team{}, &TeamList{}) }

// Labels, the finalizer and the condition types of a Team.
const (
	// TeamLabel is set on every child of a Team; its value is the Team's
	// name. The benchmark tampers with it to make the operator repair it.
	TeamLabel = "bench.steady.dev/team"
	// VariantLabel names the operator variant that owns a Team.
	VariantLabel = "bench.steady.dev/variant"
	// Finalizer is the finalizer every variant keeps on its Teams.
	Finalizer = "bench.steady.dev/cleanup"

	// ChildrenReady is True once the ConfigMap, ServiceAccount and
	// RoleBinding are as the spec says.
	ChildrenReady = "ChildrenReady"
	// Ready summarises ChildrenReady.
	Ready = "Ready"
)

// TeamSpec is the desired state of a Team.
type TeamSpec struct {
	// Members are user names, bound in the RoleBinding and listed in the
	// ConfigMap.
	// +optional
	Members []string `json:"members,omitempty"`
	// Role is the ClusterRole the members are bound to; empty means view.
	// +optional
	Role string `json:"role,omitempty"`
}

// TeamStatus is the observed state of a Team.
type TeamStatus struct {
	// ObservedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: ChildrenReady and Ready.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Team is a group of users with a ConfigMap, a ServiceAccount and a
// RoleBinding.
type Team struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TeamSpec   `json:"spec,omitempty"`
	Status TeamStatus `json:"status,omitempty"`
}

// GetConditions returns the Team's conditions (steady's and cluster-api's
// conditions.Getter).
func (t *Team) GetConditions() []metav1.Condition { return t.Status.Conditions }

// SetConditions sets the Team's conditions (steady's and cluster-api's
// conditions.Setter).
func (t *Team) SetConditions(c []metav1.Condition) { t.Status.Conditions = c }

// TeamList is a list of Teams.
type TeamList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Team `json:"items"`
}

// DeepCopyInto copies the spec into out.
func (in *TeamSpec) DeepCopyInto(out *TeamSpec) {
	*out = *in
	if in.Members != nil {
		out.Members = make([]string, len(in.Members))
		copy(out.Members, in.Members)
	}
}

// DeepCopyInto copies the status into out.
func (in *TeamStatus) DeepCopyInto(out *TeamStatus) {
	*out = *in
	if in.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

// DeepCopy returns a copy of the status.
func (in *TeamStatus) DeepCopy() *TeamStatus {
	if in == nil {
		return nil
	}
	out := new(TeamStatus)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the Team into out.
func (in *Team) DeepCopyInto(out *Team) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a copy of the Team.
func (in *Team) DeepCopy() *Team {
	if in == nil {
		return nil
	}
	out := new(Team)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *Team) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies the list into out.
func (in *TeamList) DeepCopyInto(out *TeamList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]Team, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a copy of the list.
func (in *TeamList) DeepCopy() *TeamList {
	if in == nil {
		return nil
	}
	out := new(TeamList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *TeamList) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}
