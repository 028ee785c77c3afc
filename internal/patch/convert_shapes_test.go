package patch

import (
	"math/rand/v2"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

type shapePart struct {
	N int    `json:"n,omitempty"`
	S string `json:"s,omitempty"`
}

// kindFirstObj has a field under the JSON name kind before its TypeMeta,
// whose kind the converter writes over it (go vet allows it: the TypeMeta's
// kind is one level down).
type kindFirstObj struct {
	K                 shapePart `json:"kind"`
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              shapePart `json:"spec"`
}

func (x *kindFirstObj) DeepCopyObject() runtime.Object { c := *x; return &c }

// manyObj has the other shapes a CRD's Go type may have.
type manyObj struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              shapePart  `json:"spec,omitempty"`
	Status            *shapePart `json:"status,omitempty"`
	Zero              shapePart  `json:"zero,omitzero"`
	Untagged          shapePart
	Stamp             metav1.Time `json:"stamp,omitempty"`
	Skipped           shapePart   `json:"-"`
	shapePart         `json:",inline"`
}

func (x *manyObj) DeepCopyObject() runtime.Object { c := *x; return &c }

// structsObj has struct fields only, some with a conversion of their own
// inside them, and one of them skipped.
type structsObj struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              structsSpec `json:"spec"`
	Status            shapePart   `json:"status,omitempty"`
	Skipped           shapePart   `json:"-"`
}

type structsSpec struct {
	Q    resource.Quantity    `json:"q"`
	P    intstr.IntOrString   `json:"p"`
	T    *metav1.Time         `json:"t,omitempty"`
	Raw  runtime.RawExtension `json:"raw"`
	F    float64              `json:"f"`
	Data []byte               `json:"data,omitempty"`
}

func (x *structsObj) DeepCopyObject() runtime.Object { c := *x; return &c }

// alike fails when toMaps plans other writes than the full conversion.
func alike(t *testing.T, name string, before, after client.Object, o Options) {
	t.Helper()
	fb, fa, err := convertBoth(before, after)
	if err != nil {
		t.Fatal(err)
	}
	sb, sa, err := toMaps(before, after, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, latest := range []map[string]any{nil, fb} {
		want := bodies(t, fb, fa, latest, after, o)
		if got := bodies(t, sb, sa, latest, after, o); !object.EqualJSON(got, want) {
			t.Errorf("%s: with toMaps %v, with the full conversion %v", name, got, want)
		}
	}
}

func shapeMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: "ns", Name: "o", UID: "u1", ResourceVersion: "7", Generation: 2}
}

// TestToMapsDuplicateNames: a field under the JSON name of another (kind,
// the TypeMeta's, which the converter writes over it), changed, plans the
// writes of the full conversion, in which it is never seen.
func TestToMapsDuplicateNames(t *testing.T) {
	b := &kindFirstObj{K: shapePart{N: 1}, TypeMeta: metav1.TypeMeta{APIVersion: "x.dev/v1", Kind: "KindFirst"}, ObjectMeta: shapeMeta(), Spec: shapePart{N: 1}}
	a := b.DeepCopyObject().(*kindFirstObj)
	a.K.N = 2
	alike(t, "a field under kind changed", b, a, Options{})
	a.Spec.N = 2
	alike(t, "a field under kind and the spec changed", b, a, Options{})
}

// TestToMapsOtherTypedShapes: pointers, omitzero, untagged, inline,
// skipped fields and fields with a conversion of their own, changed or
// not, plan the writes of the full conversion.
func TestToMapsOtherTypedShapes(t *testing.T) {
	tm := metav1.TypeMeta{APIVersion: "x.dev/v1", Kind: "Many"}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 17))
		b := &manyObj{TypeMeta: tm, ObjectMeta: shapeMeta(), Spec: shapePart{N: 1}, Untagged: shapePart{S: "u"}, Stamp: metav1.Unix(100, 0)}
		if rng.IntN(2) == 0 {
			b.Status = &shapePart{N: 3}
		}
		a := b.DeepCopyObject().(*manyObj)
		if b.Status != nil {
			st := *b.Status
			a.Status = &st
		}
		switch rng.IntN(8) {
		case 0:
			a.Spec.N++
		case 1:
			a.Status = nil
		case 2:
			a.Status = &shapePart{S: "new"}
		case 3:
			a.Zero = shapePart{N: 9}
		case 4:
			a.Untagged.S = "v"
		case 5:
			a.Stamp = metav1.Unix(200, 0)
		case 6:
			a.N = 4 // the inline part
		case 7:
			a.Skipped.N = 1
		}
		if rng.IntN(2) == 0 {
			a.Generation++
		}
		if rng.IntN(3) == 0 {
			a.Finalizers = []string{"x.dev/f"}
		}
		alike(t, "manyObj", b, a, Options{ObservedGeneration: rng.IntN(2) == 0})
		if _, _, ok := convertTyped(b, a, func(string) bool { return false }); ok {
			t.Fatal("convertTyped took a type with a pointer, omitzero, untagged and inline fields")
		}

		sb := &structsObj{TypeMeta: tm, ObjectMeta: shapeMeta(),
			Spec: structsSpec{Q: resource.MustParse("1"), P: intstr.FromInt32(80), Raw: runtime.RawExtension{Raw: []byte(`{"a":1}`)}, Data: []byte("x")}}
		sa := sb.DeepCopyObject().(*structsObj)
		switch rng.IntN(7) {
		case 0:
			sa.Spec.Q = resource.MustParse("1000m") // the same quantity, another form
		case 1:
			sa.Spec.P = intstr.FromString("http")
		case 2:
			now := metav1.Unix(300, 0)
			sa.Spec.T = &now
		case 3:
			sa.Spec.Data = []byte{}
		case 4:
			sa.Status.S = "done"
		case 5:
			sa.Skipped.N = 3
		case 6:
			sa.Generation = 3
		}
		alike(t, "structsObj", sb, sa, Options{ObservedGeneration: rng.IntN(2) == 0})
		if _, _, ok := convertTyped(sb, sa, func(string) bool { return false }); !ok {
			t.Fatal("convertTyped declined a type of struct fields")
		}
	}
}

// TestToMapsBuiltinTypes: Deployments, Services, Secrets and ConfigMaps,
// over random changes, plan the writes of the full conversion.
func TestToMapsBuiltinTypes(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 19))
		o := Options{ObservedGeneration: rng.IntN(2) == 0}
		if rng.IntN(2) == 0 {
			o.OwnedConditions = []string{"Available"}
			o.ConditionLists = [][]string{{"status", "conditions"}}
		}
		replicas := int32(1)
		d := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: shapeMeta(),
			Spec:   appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}},
			Status: appsv1.DeploymentStatus{ObservedGeneration: int64(1 + rng.IntN(2)), Replicas: 1}}
		da := d.DeepCopy()
		switch rng.IntN(6) {
		case 0:
			*da.Spec.Replicas = 3
		case 1:
			da.Status.ObservedGeneration = 2
		case 2:
			da.Status.Conditions = []appsv1.DeploymentCondition{{Type: "Available", Status: "True"}}
		case 3:
			da.Generation = 3
		case 4:
			da.Spec.Template.Labels = map[string]string{"a": "b"}
		}
		if rng.IntN(3) == 0 {
			da.Finalizers = []string{"x.dev/f"}
		}
		alike(t, "Deployment", d, da, o)
		if _, _, ok := convertTyped(d, da, func(string) bool { return false }); !ok {
			t.Fatal("convertTyped declined a Deployment")
		}

		s := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: shapeMeta(),
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
		sa := s.DeepCopy()
		switch rng.IntN(3) {
		case 0:
			sa.Spec.Ports[0].TargetPort = intstr.FromString("http")
		case 1:
			sa.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}
		}
		alike(t, "Service", s, sa, Options{})

		sec := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: shapeMeta(),
			Data: map[string][]byte{"k": []byte("v")}, Type: corev1.SecretTypeOpaque}
		seca := sec.DeepCopy()
		switch rng.IntN(3) {
		case 0:
			seca.Data["k"] = []byte("w")
		case 1:
			seca.Labels = map[string]string{"a": "1"}
		}
		alike(t, "Secret", sec, seca, Options{})
	}
}
