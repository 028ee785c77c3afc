package patch

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/steadyk8s/steady/internal/object"
)

// mapServer is an API server for one unstructured object of any shape, in
// an interceptor: merge patches applied as the API server applies them
// (a resourceVersion or uid in the patch a precondition), a new
// resourceVersion and fields of the server's own in every answer, a
// status subresource or none, conflicts injected on the first writes, and
// every body recorded.
type mapServer struct {
	stored    map[string]any
	rv        int
	noStatus  bool
	conflicts int // writes still to refuse with a conflict
	bodies    []string
	other     func(m map[string]any) // another writer, run before each injected conflict
}

func (s *mapServer) answer(into client.Object) {
	m := runtime.DeepCopyJSON(s.stored)
	md := m["metadata"].(map[string]any)
	md["managedFields"] = []any{map[string]any{"manager": "m", "operation": "Update"}}
	if u, ok := into.(*unstructured.Unstructured); ok {
		u.Object = m
		return
	}
	v := reflect.ValueOf(into).Elem()
	v.Set(reflect.Zero(v.Type())) // the answer's content, none of the old
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, into); err != nil {
		panic(err)
	}
}

func (s *mapServer) write(status bool, obj client.Object, p client.Patch) error {
	if status && s.noStatus {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "things"}, obj.GetName())
	}
	data, err := p.Data(obj)
	if err != nil {
		return err
	}
	s.bodies = append(s.bodies, string(data))
	if s.conflicts > 0 {
		s.conflicts--
		if s.other != nil {
			s.other(s.stored)
			s.rv++
			s.stored["metadata"].(map[string]any)["resourceVersion"] = fmt.Sprint(s.rv)
		}
		return apierrors.NewConflict(schema.GroupResource{Resource: "things"}, obj.GetName(), nil)
	}
	var body map[string]any
	if err := json.Unmarshal(data, &body); err != nil {
		return err
	}
	if md, ok := body["metadata"].(map[string]any); ok {
		if rv, ok := md["resourceVersion"]; ok && rv != fmt.Sprint(s.rv) {
			return apierrors.NewConflict(schema.GroupResource{Resource: "things"}, obj.GetName(), nil)
		}
		delete(md, "resourceVersion")
		delete(md, "uid")
	}
	if status {
		body = map[string]any{"status": body["status"]}
	} else if !s.noStatus {
		delete(body, "status")
	}
	doc, _ := json.Marshal(s.stored)
	patch, _ := json.Marshal(body)
	out, err := jsonpatch.MergePatch(doc, patch)
	if err != nil {
		return err
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(out); err != nil {
		return err
	}
	m := u.Object
	s.rv++
	m["metadata"].(map[string]any)["resourceVersion"] = fmt.Sprint(s.rv)
	if !status {
		g, _ := m["metadata"].(map[string]any)["generation"].(int64)
		m["metadata"].(map[string]any)["generation"] = g + 1
	}
	s.stored = runtime.DeepCopyJSON(m)
	s.answer(obj)
	return nil
}

func (s *mapServer) client() client.Client {
	return interceptor.NewClient(fake.NewClientBuilder().WithScheme(runtime.NewScheme()).Build(), interceptor.Funcs{
		Get: func(_ context.Context, _ client.WithWatch, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
			s.answer(obj)
			return nil
		},
		Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, p client.Patch, _ ...client.PatchOption) error {
			return s.write(false, obj, p)
		},
		SubResourcePatch: func(_ context.Context, _ client.Client, _ string, obj client.Object, p client.Patch, _ ...client.SubResourcePatchOption) error {
			return s.write(true, obj, p)
		},
	})
}

// unstructuredOf is m as an object of the map server.
func unstructuredOf(m map[string]any) *unstructured.Unstructured {
	m["apiVersion"], m["kind"] = "steady.dev/v1", "Thing"
	md := m["metadata"].(map[string]any)
	md["namespace"] = "ns"
	return &unstructured.Unstructured{Object: m}
}

// Patch of unstructured objects, whose maps the caller owns, through
// conflicts (another writer meanwhile), a missing status subresource and
// answers with fields of the server's own, twice with one snapshot chain
// (the second Patch diffing against the first's answer, as a reused Patcher
// does), and with the snapshot a shallow copy of the object (as
// finalizer.Handler takes it): neither the snapshot nor any map or list
// the object held before Patch changes; the object then holds the stored
// object; changing it changes neither the snapshot nor what the next Patch
// is diffed against; and the second Patch writes what changed since the
// first.
func TestPatchNeverWritesThroughTheCallersMaps(t *testing.T) {
	for seed := range uint64(600) {
		patchTwiceThroughAMapServer(t, seed)
		if t.Failed() {
			return
		}
	}
}

// Patches of different objects at once (the engine's shared paths, keys
// and encoding buffers) race on nothing: run with -race.
func TestConcurrentPatchesShareNothing(t *testing.T) {
	var wg sync.WaitGroup
	for g := range uint64(4) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := g * 1000; seed < g*1000+100 && !t.Failed(); seed++ {
				patchTwiceThroughAMapServer(t, seed)
			}
		}()
	}
	wg.Wait()
}

// patchTwiceThroughAMapServer is one round of
// TestPatchNeverWritesThroughTheCallersMaps.
func patchTwiceThroughAMapServer(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 5))
	read := unstructuredOf(oracleObject(rng)).Object
	s := &mapServer{stored: runtime.DeepCopyJSON(read), rv: 5, noStatus: rng.IntN(3) == 0, conflicts: rng.IntN(3)}
	if rng.IntN(2) == 0 {
		s.other = func(m map[string]any) { oracleForeign(rng, m) }
	}
	w := Writer{Client: s.client(), Sleep: func(context.Context, time.Duration) error { return nil }}
	o := oracleOptions(rng)

	var before, obj *unstructured.Unstructured
	if rng.IntN(2) == 0 {
		before = unstructuredOf(runtime.DeepCopyJSON(read))
		obj = unstructuredOf(runtime.DeepCopyJSON(read))
		oracleChange(rng, obj.Object)
	} else { // finalizer.Handler's snapshot: shallow, its own metadata
		obj = unstructuredOf(runtime.DeepCopyJSON(read))
		before = object.Shallow(obj)
		before.Object["metadata"] = maps.Clone(obj.Object["metadata"].(map[string]any))
		before.SetFinalizers(obj.GetFinalizers())
		obj.SetFinalizers(append(obj.GetFinalizers(), "ours.dev/added"))
	}
	wantBefore := before.DeepCopy()
	held := obj.Object // the caller's maps
	wantHeld := runtime.DeepCopyJSON(held)
	res, err := w.Patch(context.Background(), before, obj, o)
	if notAnObject(err) {
		return
	}
	if err != nil {
		t.Errorf("seed %d: %v", seed, err)
		return
	}
	if !reflect.DeepEqual(before, wantBefore) {
		t.Errorf("seed %d: Patch changed its snapshot", seed)
		return
	}
	if !reflect.DeepEqual(held, wantHeld) {
		t.Errorf("seed %d: Patch changed the maps the object held:\n%v\nwas\n%v", seed, held, wantHeld)
		return
	}
	if len(res.Wrote) == 0 || res.Stale != "" {
		return
	}
	stored := runtime.DeepCopyJSON(s.stored)
	delete(stored["metadata"].(map[string]any), "managedFields")
	got := runtime.DeepCopyJSON(obj.Object)
	delete(got["metadata"].(map[string]any), "managedFields")
	if !reflect.DeepEqual(got, stored) {
		t.Errorf("seed %d: the object after Patch\n%v\nthe stored one\n%v", seed, got, stored)
		return
	}
	var base map[string]any
	if res.StatusBase != nil {
		base = runtime.DeepCopyJSON(res.StatusBase)
	}

	// The second Patch, on a copy of the answer as the Patcher takes it.
	before2 := obj.DeepCopy()
	wantBefore2 := before2.DeepCopy()
	held2 := obj.Object
	oracleChange(rng, obj.Object) // the caller changes the answer in place
	if res.StatusBase != nil && !reflect.DeepEqual(res.StatusBase, base) {
		t.Errorf("seed %d: changing the object changed Result.StatusBase", seed)
		return
	}
	wantHeld2 := runtime.DeepCopyJSON(held2)
	s.conflicts = rng.IntN(2)
	if _, err := w.Patch(context.Background(), before2, obj, o); err != nil && !notAnObject(err) {
		t.Errorf("seed %d: second Patch: %v\nbefore %v\nobj %v\nstored %v", seed, err, wantBefore2.Object["spec"], obj.Object["spec"], s.stored["spec"])
		return
	}
	if !reflect.DeepEqual(before2, wantBefore2) || !reflect.DeepEqual(held2, wantHeld2) {
		t.Errorf("seed %d: the second Patch changed its snapshot or the object's maps", seed)
		return
	}
}

// notAnObject: a change that replaced the parent of a condition list by a
// value (spec.k0, holding spec.k0.conds, set to a string) is refused, as
// before the diet (dd1f9f1 does the same).
func notAnObject(err error) bool {
	return err != nil && strings.Contains(err.Error(), "is not an object")
}
