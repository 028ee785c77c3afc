package object

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/randfill"
)

// TestMetaToMapAgreesWithConverter: for random ObjectMetas (every field
// set or not, nil, empty and full maps and lists, zero and non-zero times,
// times in other zones and with nanoseconds, with and without
// managedFields), MetaToMap gives the converter's map, value for value and
// type for type.
func TestMetaToMapAgreesWithConverter(t *testing.T) {
	f := randfill.NewWithSeed(1).NilChance(0.3).NumElements(0, 3)
	r := rand.New(rand.NewPCG(1, 2))
	zone := time.FixedZone("X", 5*3600+1800)
	for i := range 20000 {
		var md metav1.ObjectMeta
		f.Fill(&md)
		// What randfill does not make on its own: empty but not nil maps
		// and lists, zero and non-UTC times, a zero time behind a pointer.
		switch r.IntN(4) {
		case 0:
			md.Labels, md.Annotations, md.Finalizers, md.OwnerReferences = map[string]string{}, map[string]string{}, []string{}, []metav1.OwnerReference{}
		case 1:
			md.CreationTimestamp = metav1.Time{}
			md.DeletionTimestamp = &metav1.Time{}
		case 2:
			md.CreationTimestamp = metav1.NewTime(time.Unix(1700000000, 123456789).In(zone))
		}
		if r.IntN(4) > 0 {
			md.ManagedFields = nil
		}
		want, werr := runtime.DefaultUnstructuredConverter.ToUnstructured(&md)
		got, gerr := MetaToMap(&md)
		if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Fatalf("object %d: MetaToMap gives\n%s (%v)\nthe converter\n%s (%v)\ntypes: %s", i, g, gerr, w, werr, typeDiff(got, want))
		}
	}
}

// typeDiff names the first key whose values differ in Go type or value.
func typeDiff(a, b map[string]any) string {
	for k, v := range b {
		if !reflect.DeepEqual(a[k], v) {
			return k + ": " + reflect.TypeOf(a[k]).String() + " against " + reflect.TypeOf(v).String()
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return k + " is extra"
		}
	}
	return "none"
}

func BenchmarkMetaToMap(b *testing.B) {
	md := benchWidget().ObjectMeta
	b.Run("converter", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&md); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("MetaToMap", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := MetaToMap(&md); err != nil {
				b.Fatal(err)
			}
		}
	})
}
