package ownership

import (
	"encoding/json"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestRemoveOnlyKeysRead: a map of the child's Go type dropped whole is
// removed key by key (the keys read); a struct, a map of objects, or a
// field of a kind without a Go type stays a null and asks for the lock.
func TestRemoveOnlyKeysRead(t *testing.T) {
	for _, tc := range []struct {
		name       string
		t          reflect.Type
		live       string
		patch      string
		want       string
		dropsWhole bool
	}{
		{"labels", withMetadataOnly, `{"metadata":{"labels":{"a":"1"}}}`, `{"metadata":{"labels":null}}`, `{"metadata":{"labels":{"a":null}}}`, false},
		{"ConfigMap data", reflect.TypeOf(&corev1.ConfigMap{}), `{"data":{"a":"1","b":"2"}}`, `{"data":null}`, `{"data":{"a":null,"b":null}}`, false},
		{"Secret data ([]byte values)", reflect.TypeOf(&corev1.Secret{}), `{"data":{"a":"MQ=="}}`, `{"data":null}`, `{"data":{"a":null}}`, false},
		{"pod template annotations", reflect.TypeOf(&appsv1.Deployment{}), `{"spec":{"template":{"metadata":{"annotations":{"a":"1"}}}}}`,
			`{"spec":{"template":{"metadata":{"annotations":null}}}}`, `{"spec":{"template":{"metadata":{"annotations":{"a":null}}}}}`, false},
		{"resource limits (Quantity values)", reflect.TypeOf(&corev1.Pod{}), `{"spec":{"overhead":{"cpu":"1"}}}`, `{"spec":{"overhead":null}}`, `{"spec":{"overhead":{"cpu":null}}}`, false},
		{"a struct", reflect.TypeOf(&appsv1.Deployment{}), `{"spec":{"strategy":{"rollingUpdate":{"maxSurge":1}}}}`,
			`{"spec":{"strategy":{"rollingUpdate":null}}}`, `{"spec":{"strategy":{"rollingUpdate":null}}}`, true},
		{"a kind without a Go type", withMetadataOnly, `{"spec":{"tags":{"a":"1"}}}`, `{"spec":{"tags":null}}`, `{"spec":{"tags":null}}`, true},
		{"a scalar", reflect.TypeOf(&corev1.ConfigMap{}), `{"data":{"a":"1"}}`, `{"data":{"a":null}}`, `{"data":{"a":null}}`, false},
		{"an empty map read", reflect.TypeOf(&corev1.ConfigMap{}), `{"data":{}}`, `{"data":null}`, `{"data":null}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var live, patch, want map[string]any
			for _, x := range []struct {
				s    string
				into *map[string]any
			}{{tc.live, &live}, {tc.patch, &patch}, {tc.want, &want}} {
				if err := json.Unmarshal([]byte(x.s), x.into); err != nil {
					t.Fatal(err)
				}
			}
			dropsWhole := removeOnlyKeysRead(patch, live, tc.t)
			if !reflect.DeepEqual(patch, want) || dropsWhole != tc.dropsWhole {
				t.Errorf("got %v, dropsWhole %v; want %s, %v", patch, dropsWhole, tc.want, tc.dropsWhole)
			}
		})
	}
}
