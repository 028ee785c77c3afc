package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/reconcile"
)

// noGeneration is the kubebuilder scaffold's shape: conditions in a
// []metav1.Condition field, no observedGeneration, no methods.
type noGeneration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            struct {
		Conditions []metav1.Condition `json:"conditions,omitempty"`
	} `json:"status,omitempty"`
}

func (o *noGeneration) DeepCopyObject() runtime.Object { return jsonCopy(o, &noGeneration{}) }

// narrowGeneration has an observedGeneration that is no int64, and a
// status behind a pointer.
type narrowGeneration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            *struct {
		ObservedGeneration int32              `json:"observedGeneration,omitempty"`
		Conditions         []metav1.Condition `json:"conditions,omitempty"`
	} `json:"status,omitempty"`
}

func (o *narrowGeneration) DeepCopyObject() runtime.Object {
	return jsonCopy(o, &narrowGeneration{})
}

// SharedStatus is what several kinds of an operator share, embedded inline
// in each one's status: its fields are status.observedGeneration and
// status.conditions.
type SharedStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

type sharedStatusKind struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            struct {
		SharedStatus `json:",inline"`
		Phase        string `json:"phase,omitempty"`
	} `json:"status,omitempty"`
}

func (o *sharedStatusKind) DeepCopyObject() runtime.Object {
	return jsonCopy(o, &sharedStatusKind{})
}

// untaggedGeneration's observedGeneration has no json tag: the client's
// decoder (exact names) never fills it from status.observedGeneration.
type untaggedGeneration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            struct {
		ObservedGeneration int64
	} `json:"status,omitempty"`
}

func (o *untaggedGeneration) DeepCopyObject() runtime.Object {
	return jsonCopy(o, &untaggedGeneration{})
}

func jsonCopy[T runtime.Object](in, out T) T {
	b, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	return out
}

// forWith builds For[T] with opts over a client nothing is asked of.
func forWith[T any, P interface {
	*T
	client.Object
}](opts ...reconcile.ForOption) error {
	c := fake.NewClientBuilder().WithScheme(thingScheme()).Build()
	_, err := reconcile.For(c, func(context.Context, P) (ctrl.Result, error) { return ctrl.Result{}, nil }, opts...)
	return err
}

// For refuses, when it is built, an option that cannot work on the Go
// type, naming the type and what it lacks; it accepts the kubebuilder
// shape (conditions without methods) for the Ready summary.
func TestForRefusesOptionsTheTypeCannotHold(t *testing.T) {
	gen := reconcile.WithObservedGeneration{}
	summary := reconcile.WithReadySummary()
	for _, tc := range []struct {
		name   string
		build  func(...reconcile.ForOption) error
		opts   []reconcile.ForOption
		option string // the refused option; empty: accepted
		typ    string
	}{
		{"ConfigMap, summary", forWith[corev1.ConfigMap], []reconcile.ForOption{summary}, "WithReadySummary", "*v1.ConfigMap"},
		{"ConfigMap, observedGeneration", forWith[corev1.ConfigMap], []reconcile.ForOption{gen}, "WithObservedGeneration", "*v1.ConfigMap"},
		{"scaffold shape, observedGeneration", forWith[noGeneration], []reconcile.ForOption{summary, gen}, "WithObservedGeneration", "*reconcile_test.noGeneration"},
		{"scaffold shape, summary", forWith[noGeneration], []reconcile.ForOption{summary}, "", ""},
		{"an int32 observedGeneration", forWith[narrowGeneration], []reconcile.ForOption{gen}, "WithObservedGeneration", "*reconcile_test.narrowGeneration"},
		{"a status pointer, summary", forWith[narrowGeneration], []reconcile.ForOption{summary}, "", ""},
		{"cluster-api's conditions", forWith[Gadget], []reconcile.ForOption{summary}, "WithReadySummary", "*reconcile_test.Gadget"},
		{"methods and the field", forWith[testapi.Widget], []reconcile.ForOption{summary, gen}, "", ""},
		{"the field, no methods", forWith[Thing], []reconcile.ForOption{summary, gen}, "", ""},
		{"a status embedding its fields inline", forWith[sharedStatusKind], []reconcile.ForOption{summary, gen}, "", ""},
		{"an untagged observedGeneration", forWith[untaggedGeneration], []reconcile.ForOption{gen}, "WithObservedGeneration", "*reconcile_test.untaggedGeneration"},
		{"unstructured: not judged", forWith[unstructured.Unstructured], []reconcile.ForOption{gen}, "", ""},
		// No Setter and no field: the summary would dereference a nil list
		// on the first reconcile (For refused it before the kubebuilder
		// shape was taken).
		{"unstructured, summary", forWith[unstructured.Unstructured], []reconcile.ForOption{summary}, "WithReadySummary", "*unstructured.Unstructured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.build(tc.opts...)
			var oe *reconcile.OptionError
			switch {
			case tc.option == "" && err != nil:
				t.Errorf("For = %v, want it built", err)
			case tc.option == "":
			case !errors.As(err, &oe):
				t.Errorf("For = %v, want an *OptionError", err)
			case oe.Option != tc.option || oe.Type != tc.typ || oe.Missing == "":
				t.Errorf("OptionError = %+v, want option %s on %s and what it misses", oe, tc.option, tc.typ)
			}
		})
	}
}

// Patch refuses WithObservedGeneration on a type that cannot hold it
// before any request.
func TestPatchRefusesObservedGenerationTheTypeCannotHold(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", UID: "u1", ResourceVersion: "1"}}
	fail := func(string) error { t.Error("a request was made"); return errors.New("no request expected") }
	c := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			return fail("patch")
		},
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return fail("status patch")
		},
	})
	p, err := reconcile.NewPatcher(c, cm)
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"k": "v"}
	err = p.Patch(context.Background(), cm, reconcile.WithObservedGeneration{})
	var pe *reconcile.PatchError
	var oe *reconcile.OptionError
	if !errors.As(err, &pe) || len(pe.Written) != 0 || !errors.As(err, &oe) || oe.Option != "WithObservedGeneration" {
		t.Fatalf("Patch = %v, want a *PatchError with nothing written wrapping an *OptionError", err)
	}
}

// For on a kubebuilder type (Thing: status.conditions without
// GetConditions): the Ready summary is set, the conditions the body sets
// are judged before the write as on a type with methods, and a converged
// object costs no write.
func TestForOnAKubebuilderType(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	c, n, err := testapi.NewCountingClient(env.Config, thingScheme())
	if err != nil {
		t.Fatal(err)
	}
	u := createU(t, newUnstructured("Thing", env.Namespace(t), "kb"))
	status := metav1.ConditionTrue
	r, err := reconcile.For(c, func(_ context.Context, th *Thing) (ctrl.Result, error) {
		conditions.Set(conditions.On(th, &th.Status.Conditions), metav1.Condition{Type: "Available", Status: status, Reason: "Up"})
		return ctrl.Result{}, nil
	}, reconcile.WithReadySummary(conditions.SummaryOptions{ConditionTypes: []string{"Available"}}), reconcile.WithObservedGeneration{})
	if err != nil {
		t.Fatal(err)
	}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(u)}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	got := &Thing{}
	if err := env.Client.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	ready := conditions.Get(conditions.On(got, &got.Status.Conditions), conditions.Ready)
	if ready == nil || ready.Status != metav1.ConditionTrue || !conditions.IsTrue(conditions.On(got, &got.Status.Conditions), "Available") {
		t.Fatalf("conditions after the reconcile: %+v, want Available and Ready True", got.Status.Conditions)
	}
	if got.Status.ObservedGeneration != got.Generation {
		t.Errorf("observedGeneration %d, generation %d", got.Status.ObservedGeneration, got.Generation)
	}

	n.Reset()
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if w := n.Writes(); w != 0 {
		t.Errorf("a converged object cost %d writes (%s)", w, n)
	}

	status = "Maybe" // the API server refuses it in a metav1.Condition
	n.Reset()
	_, err = r.Reconcile(ctx, req)
	var fe *conditions.FieldError
	if !errors.As(err, &fe) || fe.Field != "status.conditions[0].status" {
		t.Fatalf("Reconcile with a condition status Maybe = %v, want a *conditions.FieldError naming status.conditions[0].status", err)
	}
	if w := n.Writes(); w != 0 {
		t.Errorf("the refused change cost %d writes (%s)", w, n)
	}
}

// The refusal says what the type lacks, and nothing it has: Gadget has
// GetConditions and SetConditions, and a status.conditions field, all of
// cluster-api's Conditions type.
func TestOptionErrorNamesTheSignature(t *testing.T) {
	err := forWith[Gadget](reconcile.WithReadySummary())
	if err == nil || !strings.Contains(err.Error(), "GetConditions() []metav1.Condition") || !strings.Contains(err.Error(), "SetConditions([]metav1.Condition)") {
		t.Errorf("For = %v, want the methods named with their signatures (Gadget has methods of those names)", err)
	}
}
