package reconcile_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/scope"
	"github.com/steadyk8s/steady/internal/testapi"
)

// Thing is a typed view of the things.test.steady.dev CRD of testdata
// (whose schema takes anything), with the field shapes the tests need.
type Thing struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ThingSpec   `json:"spec,omitempty"`
	Status            ThingStatus `json:"status,omitempty"`
}

type ThingSpec struct {
	Topology *Topology         `json:"topology,omitempty"`
	Paused   bool              `json:"paused,omitempty"`
	Replicas int               `json:"replicas,omitempty"`
	Tags     []string          `json:"tags,omitempty"`
	Params   map[string]string `json:"params,omitempty"`
}

type Topology struct {
	Class     string   `json:"class,omitempty"`
	Variables []string `json:"variables,omitempty"`
}

type ThingStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Phase              string             `json:"phase,omitempty"`
	Ready              bool               `json:"ready,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

func (t *Thing) DeepCopyObject() runtime.Object {
	b, err := json.Marshal(t)
	if err != nil {
		panic(err)
	}
	out := &Thing{}
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	return out
}

type ThingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Thing `json:"items"`
}

func (l *ThingList) DeepCopyObject() runtime.Object {
	b, _ := json.Marshal(l)
	out := &ThingList{}
	_ = json.Unmarshal(b, out)
	return out
}

var thingGV = schema.GroupVersion{Group: "test.steady.dev", Version: "v1"}

func thingScheme() *runtime.Scheme {
	s := testapi.Scheme()
	s.AddKnownTypes(thingGV, &Thing{}, &ThingList{}, &Gadget{}, &GadgetList{})
	return s
}

// newUnstructured returns an empty object of a testdata kind.
func newUnstructured(kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(thingGV.WithKind(kind))
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// createU creates u (retrying while its CRD is being established) and
// reads it back.
func createU(t *testing.T, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for err := env.Client.Create(ctx, u.DeepCopy()); err != nil; err = env.Client.Create(ctx, u.DeepCopy()) {
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return getU(t, u)
}

func getU(t *testing.T, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got := newUnstructured(u.GetKind(), u.GetNamespace(), u.GetName())
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(u), got); err != nil {
		t.Fatal(err)
	}
	return got
}

// writeStatus sets u's status (as a whole) through the status subresource.
func writeStatus(t *testing.T, u *unstructured.Unstructured, status map[string]any) *unstructured.Unstructured {
	t.Helper()
	u = u.DeepCopy()
	u.Object["status"] = status
	if err := env.Client.Status().Update(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return getU(t, u)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

const (
	time1h = 3600 * 1e9
	time1m = 60 * 1e9
)

func runtimeToMap(obj runtime.Object) (map[string]any, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

// reading is c carrying a State of its own, without informers, whose API
// reader is api: what For makes of a client that carries none, with the
// API reader a test gives (one that counts its GETs, say).
func reading(c client.Client, api client.Reader) client.Client {
	return scope.Wrap(c, scope.New(c, api, nil))
}
