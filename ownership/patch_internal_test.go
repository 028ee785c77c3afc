package ownership

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"strconv"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/steadyk8s/steady/internal/object"

	"github.com/steadyk8s/steady/internal/testapi"
)

// TestOverlay: set applied onto base as jsonpatch.MergePatch applies a
// merge patch (nulls remove, objects merge, the rest replaces; nulls
// dropped from what is set where base has no object), into a new map.
func TestOverlay(t *testing.T) {
	for _, tc := range []struct {
		name, base, set, want string
	}{
		{"no base", `null`, `{"a":1}`, `{"a":1}`},
		{"a base that is no object", `"x"`, `{"a":1,"b":null}`, `{"a":1}`},
		{"set wins, the rest stays", `{"a":1,"b":2}`, `{"a":3}`, `{"a":3,"b":2}`},
		{"null removes", `{"a":1,"b":2}`, `{"a":null}`, `{"b":2}`},
		{"null of nothing", `{"b":2}`, `{"a":null}`, `{"b":2}`},
		{"objects merge", `{"m":{"a":1,"b":{"c":1,"d":2}}}`, `{"m":{"b":{"c":null,"e":3}}}`, `{"m":{"a":1,"b":{"d":2,"e":3}}}`},
		{"an object replaces a scalar, its nulls dropped", `{"m":"x"}`, `{"m":{"a":1,"b":null,"c":{"d":null}}}`, `{"m":{"a":1,"c":{}}}`},
		{"an object set where base has null", `{"m":null}`, `{"m":{"a":null,"b":1}}`, `{"m":{"b":1}}`},
		{"lists replace whole", `{"l":[1,2,3]}`, `{"l":[4]}`, `{"l":[4]}`},
		{"a new list: nulls dropped in its objects, null elements kept", `{}`, `{"l":[{"a":null,"b":1},null,2]}`, `{"l":[{"b":1},null,2]}`},
		{"a list replacing an object keeps its nulls", `{"l":{"x":1}}`, `{"l":[{"a":null}]}`, `{"l":[{"a":null}]}`},
		{"a scalar replacing an object", `{"m":{"a":1}}`, `{"m":5}`, `{"m":5}`},
		{"a null kept in base", `{"a":null,"b":1}`, `{"b":2}`, `{"a":null,"b":2}`},
		{"an empty object merges into nothing", `{"m":{"a":1}}`, `{"m":{}}`, `{"m":{"a":1}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var base, set, want any
			decode(t, tc.base, &base)
			decode(t, tc.set, &set)
			decode(t, tc.want, &want)
			got, err := overlay(base, set.(map[string]any))
			if err != nil || !object.EqualJSON(got, want) {
				t.Errorf("overlay(%s, %s) = %v, %v, want %s", tc.base, tc.set, got, err, tc.want)
			}
			baseJSON, setJSON := mustJSON(t, base), mustJSON(t, set)
			testapi.Scribble(got)
			if mustJSON(t, base) != baseJSON || mustJSON(t, set) != setJSON {
				t.Errorf("changing the result changed base or set: %s, %s", mustJSON(t, base), mustJSON(t, set))
			}
		})
	}
}

// TestSetMetadata: a precondition is set in the patch's metadata, which is
// added if absent; a patch that removes the metadata cannot carry one.
// encodePatch leaves the patch it encodes as it was.
func TestSetMetadata(t *testing.T) {
	for _, tc := range []struct {
		name, patch, want string
		fails             bool
	}{
		{"no metadata", `{"spec":{"a":1}}`, `{"metadata":{"uid":"u"},"spec":{"a":1}}`, false},
		{"metadata", `{"metadata":{"labels":{"a":null}}}`, `{"metadata":{"labels":{"a":null},"uid":"u"}}`, false},
		{"metadata removed", `{"metadata":null}`, ``, true},
		{"metadata not an object", `{"metadata":"x"}`, ``, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p, want map[string]any
			decode(t, tc.patch, &p)
			err := setMetadata(p, "uid", "u")
			if tc.fails {
				if err == nil {
					t.Errorf("no error, patch %v", p)
				}
				return
			}
			decode(t, tc.want, &want)
			if err != nil || !reflect.DeepEqual(p, want) {
				t.Errorf("got %v, %v; want %s", p, err, tc.want)
			}
		})
	}
	var p map[string]any
	decode(t, `{"metadata":{"labels":{"a":"1"}},"spec":{"a":1}}`, &p)
	before := mustJSON(t, p)
	data, err := encodePatch(p, precondition{"resourceVersion", "7"}, precondition{"uid", "u"})
	if err != nil || string(data) != `{"metadata":{"labels":{"a":"1"},"resourceVersion":"7","uid":"u"},"spec":{"a":1}}` {
		t.Errorf("encodePatch: %s, %v", data, err)
	}
	if after := mustJSON(t, p); after != before {
		t.Errorf("encodePatch changed the patch: %s, was %s", after, before)
	}
}

// oracleType is the Go type of the random objects of
// TestPatchAsTheJSONRoundTripsMadeIt: maps of scalars (removed key by key),
// a map of objects and a struct (removed whole, locked).
type oracleType struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		Tags map[string]string            `json:"tags"`
		Objs map[string]map[string]string `json:"objs"`
		Sub  struct {
			A string `json:"a"`
		} `json:"sub"`
	} `json:"spec"`
	Status struct {
		Tags map[string]string `json:"tags"`
		Sub  struct {
			A string `json:"a"`
		} `json:"sub"`
	} `json:"status"`
}

// TestPatchAsTheJSONRoundTripsMadeIt: on random pairs of objects, the
// patches CreateOrPatch builds on maps (the object's, the status's) are,
// byte for byte, what the JSON round trips through jsonpatch made before
// (kept here as the oracle), locked alike, with the same fields for
// changedAt; and they share no map or list with the objects they were
// made from; nor does overlay's result (jsonpatch.MergePatch's).
func TestPatchAsTheJSONRoundTripsMadeIt(t *testing.T) {
	seed := time.Now().UnixNano()
	if s, err := strconv.ParseInt(os.Getenv("STEADY_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (STEADY_SEED=%d replays it)", seed, seed)
	r := rand.New(rand.NewSource(seed))
	typ := reflect.TypeOf(oracleType{})
	var nonEmpty, locks, keyByKey, unlocked, refused int
	for i := 0; i < 3000; i++ {
		live := randomObject(r)
		want := mutated(r, live)
		if i%2 == 0 {
			want = randomObject(r)
		}
		liveJSON, wantJSON := mustJSON(t, live), mustJSON(t, want)
		where := fmt.Sprintf("live %s, want %s", liveJSON, wantJSON)

		// The object's patch, as patchChild builds it.
		oldData, oldDiff, oldLocked, oldErr := jsonPatchChild(t, live, want, typ)
		diff := object.MergeDiff(live, want)
		if (diff == nil) != (oldDiff == nil) {
			t.Fatalf("%s: patch %v, before %s", where, diff, oldData)
		}
		if diff != nil {
			nonEmpty++
			diffJSON := mustJSON(t, diff)
			locked := removeOnlyKeysRead(diff, live, typ) || replacesList(diff, live)
			if mustJSON(t, diff) != diffJSON {
				keyByKey++
			}
			if locked {
				locks++
			} else {
				unlocked++
			}
			pre := []precondition{{"uid", "u-1"}}
			if locked {
				pre = append([]precondition{{"resourceVersion", "42"}}, pre...)
			}
			data, err := encodePatch(diff, pre...)
			if (err != nil) != (oldErr != nil) {
				t.Fatalf("%s: error %v, before %v", where, err, oldErr)
			}
			if err != nil {
				refused++
			}
			if string(data) != string(oldData) || locked != oldLocked || mustJSON(t, diff) != mustJSON(t, oldDiff) {
				t.Fatalf("%s:\npatch %s, locked %v, fields %s\nbefore %s, locked %v, fields %s", where, data, locked, mustJSON(t, diff), oldData, oldLocked, mustJSON(t, oldDiff))
			}
			testapi.Scribble(diff)
		}

		// The status patch, as patchStatus builds it.
		oldStatus, oldLists := jsonPatchStatus(t, live["status"], want["status"], typ)
		p := object.MergeDiff(map[string]any{"status": live["status"]}, map[string]any{"status": want["status"]})
		if (p == nil) != (oldStatus == nil) {
			t.Fatalf("%s: status patch %v, before %s", where, p, oldStatus)
		}
		if p != nil {
			if read, ok := live["status"].(map[string]any); ok && len(read) > 0 && p["status"] == nil {
				p["status"] = nulls(read)
			}
			lists := removeOnlyKeysRead(p, map[string]any{"status": live["status"]}, typ) || replacesList(p, map[string]any{"status": live["status"]})
			data, err := encodePatch(p, precondition{"uid", "u-1"}, precondition{"resourceVersion", "42"})
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != string(oldStatus) || lists != oldLists {
				t.Fatalf("%s:\nstatus patch %s, locked %v\nbefore %s, locked %v", where, data, lists, oldStatus, oldLists)
			}
			testapi.Scribble(p)
		}

		// overlay, as createWithStatus uses it.
		if set, ok := want["status"].(map[string]any); ok && len(set) > 0 {
			got, err := overlay(live["status"], set)
			if err != nil {
				t.Fatalf("%s: overlay: %v", where, err)
			}
			testapi.Scribble(got)
		}
		if mustJSON(t, live) != liveJSON || mustJSON(t, want) != wantJSON {
			t.Fatalf("changing a patch changed its objects: live %s, want %s; were %s, %s", mustJSON(t, live), mustJSON(t, want), liveJSON, wantJSON)
		}
	}
	t.Logf("%d patches: %d locked, %d not, %d removing a map key by key, %d refused (metadata removed)", nonEmpty, locks, unlocked, keyByKey, refused)
	if nonEmpty < 1000 || locks == 0 || unlocked == 0 || keyByKey == 0 || refused == 0 {
		t.Errorf("the random pairs miss a case")
	}
}

// jsonPatchChild is patchChild's patch as it was built by JSON round trips
// through jsonpatch: the patch sent (uid "u-1", and resourceVersion "42"
// when locked), the fields changedAt is given, whether it is locked; a nil
// patch and fields for no difference.
func jsonPatchChild(t testing.TB, live, want map[string]any, typ reflect.Type) (data []byte, fields map[string]any, locked bool, err error) {
	t.Helper()
	p := jsonMergePatch(t, live, want)
	if p == nil {
		return nil, nil, false, nil
	}
	// removeOnlyKeysRead as it was: decode, rewrite, encode if changed.
	var m map[string]any
	decode(t, string(p), &m)
	changed, dropsWhole := jsonDropKeysRead(m, live, typ)
	if changed {
		p = []byte(mustJSON(t, m))
	}
	decode(t, string(p), &fields)
	locked = dropsWhole || replacesList(fields, live)
	if locked {
		if p, err = jsonWithMetadata(t, p, "resourceVersion", "42"); err != nil {
			return nil, fields, locked, err
		}
	}
	p, err = jsonWithMetadata(t, p, "uid", "u-1")
	return p, fields, locked, err
}

// jsonDropKeysRead is removeOnlyKeysRead as it was, reporting also whether
// it changed the patch.
func jsonDropKeysRead(patch, live map[string]any, t reflect.Type) (changed, dropsWhole bool) {
	for k, v := range patch {
		ft := fieldType(t, k)
		switch pv := v.(type) {
		case nil:
			read, ok := live[k].(map[string]any)
			if !ok || len(read) == 0 {
				continue
			}
			if !isMap(ft) || hasObjects(read) {
				dropsWhole = true
				continue
			}
			n := make(map[string]any, len(read))
			for key := range read {
				n[key] = nil
			}
			patch[k], changed = n, true
		case map[string]any:
			read, _ := live[k].(map[string]any)
			c, d := jsonDropKeysRead(pv, read, ft)
			changed, dropsWhole = changed || c, dropsWhole || d
		}
	}
	return changed, dropsWhole
}

// jsonPatchStatus is patchStatus's patch (locked: uid "u-1",
// resourceVersion "42") as it was built by JSON round trips, and whether
// it replaces a list or removes an object; nil for no difference.
func jsonPatchStatus(t testing.TB, base, want any, typ reflect.Type) ([]byte, bool) {
	t.Helper()
	data := jsonMergePatch(t, map[string]any{"status": base}, map[string]any{"status": want})
	if data == nil {
		return nil, false
	}
	var parsed map[string]any
	decode(t, string(data), &parsed)
	if read, ok := base.(map[string]any); ok && len(read) > 0 && parsed["status"] == nil {
		n := map[string]any{}
		for k := range read {
			n[k] = nil
		}
		parsed["status"] = n
	}
	_, dropsWhole := jsonDropKeysRead(parsed, map[string]any{"status": base}, typ)
	lists := dropsWhole || replacesList(parsed, map[string]any{"status": base})
	data, err := jsonWithMetadata(t, []byte(mustJSON(t, parsed)), "uid", "u-1")
	if err == nil {
		data, err = jsonWithMetadata(t, data, "resourceVersion", "42")
	}
	if err != nil {
		t.Fatal(err) // a status patch has no metadata
	}
	return data, lists
}

// jsonMergePatch is the merge patch as ownership made it before
// object.MergeDiff: jsonpatch.CreateMergePatch of both maps encoded, nil
// for "{}".
func jsonMergePatch(t testing.TB, a, b map[string]any) []byte {
	t.Helper()
	p, err := jsonpatch.CreateMergePatch([]byte(mustJSON(t, a)), []byte(mustJSON(t, b)))
	if err != nil {
		t.Fatal(err)
	}
	if string(p) == "{}" {
		return nil
	}
	return p
}

// jsonWithMetadata is withMetadata as it was.
func jsonWithMetadata(t testing.TB, patch []byte, field, value string) ([]byte, error) {
	t.Helper()
	var p map[string]any
	decode(t, string(patch), &p)
	if err := unstructured.SetNestedField(p, value, "metadata", field); err != nil {
		return nil, err
	}
	return []byte(mustJSON(t, p)), nil
}

var oracleKeys = []string{"metadata", "labels", "spec", "tags", "objs", "sub", "status", "a", "b", "c"}

// randomObject is an object map as ToMap gives them, of keys that
// oracleType knows in part: metadata with labels, spec and status with
// maps, lists, scalars and nulls at random.
func randomObject(r *rand.Rand) map[string]any {
	obj := map[string]any{"metadata": map[string]any{"name": "x"}}
	if r.Intn(3) > 0 {
		obj["metadata"].(map[string]any)["labels"] = randomMap(r, 2)
	}
	for _, k := range []string{"spec", "status"} {
		if r.Intn(4) > 0 {
			obj[k] = randomMap(r, 3)
		}
	}
	return obj
}

func randomMap(r *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for n := r.Intn(4); n > 0; n-- {
		m[oracleKeys[r.Intn(len(oracleKeys))]] = randomValue(r, depth-1)
	}
	return m
}

func randomValue(r *rand.Rand, depth int) any {
	switch n := r.Intn(10); {
	case n < 3 && depth > 0:
		return randomMap(r, depth)
	case n == 3 && depth > 0:
		l := make([]any, r.Intn(3))
		for i := range l {
			l[i] = randomValue(r, depth-1)
		}
		return l
	case n == 4:
		return nil
	case n == 5:
		return int64(r.Intn(3))
	case n == 6:
		return float64(r.Intn(3)) // the same JSON number as an int64 of its value
	case n == 7:
		return 0.5
	case n == 8:
		return r.Intn(2) == 0
	}
	return []string{"1", "2", "<&>"}[r.Intn(3)]
}

// mutated is a deep copy of v with random changes: values changed,
// removed, emptied, set to null (also as a Go nil map or list), added.
func mutated(r *rand.Rand, v map[string]any) map[string]any {
	out := map[string]any{}
	for k, e := range v {
		switch r.Intn(8) {
		case 0: // removed
		case 1:
			out[k] = nil
		case 2:
			out[k] = randomValue(r, 2)
		case 3:
			if _, ok := e.(map[string]any); ok {
				out[k] = map[string]any{}
				continue
			}
			out[k] = mutatedValue(r, e)
		case 4: // code's nil map or list (var items []any): JSON null
			switch e.(type) {
			case map[string]any:
				out[k] = map[string]any(nil)
			case []any:
				out[k] = []any(nil)
			default:
				out[k] = mutatedValue(r, e)
			}
		default:
			out[k] = mutatedValue(r, e)
		}
	}
	if r.Intn(4) == 0 {
		out[oracleKeys[r.Intn(len(oracleKeys))]] = randomValue(r, 2)
	}
	return out
}

func mutatedValue(r *rand.Rand, v any) any {
	switch v := v.(type) {
	case map[string]any:
		return mutated(r, v)
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = mutatedValue(r, e)
		}
		return l
	}
	return v
}

func decode(t testing.TB, s string, into any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), into); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// BenchmarkBuildPatch measures building CreateOrPatch's patch of a
// Deployment, its spec assigned wholesale (dropping the server's defaults)
// with another replica count, without the API server: the JSON round trips
// as they were (the oracle of TestPatchAsTheJSONRoundTripsMadeIt) beside
// the map it is now, from the two objects in map form to the bytes sent.
func BenchmarkBuildPatch(b *testing.B) {
	live, want := deploymentMaps(b)
	typ := reflect.TypeOf(&appsv1.Deployment{})
	b.Run("json-round-trips", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if data, _, _, err := jsonPatchChild(b, withoutStatus(live), withoutStatus(want), typ); err != nil || data == nil {
				b.Fatal(data, err)
			}
		}
	})
	b.Run("maps", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			diff := object.MergeDiff(withoutStatus(live), withoutStatus(want))
			locked := removeOnlyKeysRead(diff, live, typ) || replacesList(diff, withoutStatus(live))
			pre := []precondition{{"uid", "u-1"}}
			if locked {
				pre = append(pre, precondition{"resourceVersion", "42"})
			}
			if data, err := encodePatch(diff, pre...); err != nil || data == nil {
				b.Fatal(data, err)
			}
		}
	})
}

// deploymentMaps are a Deployment as the API server stores it (defaults
// set, a status) and as a wholesale mutate wants it, in map form without
// the server's metadata.
func deploymentMaps(b *testing.B) (live, want map[string]any) {
	labels := map[string]string{"app": "web"}
	spec := func(replicas int32) appsv1.DeploymentSpec {
		return appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}},
			},
		}
	}
	d := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u-1", ResourceVersion: "42", Generation: 3,
			Annotations: map[string]string{"deployment.kubernetes.io/revision": "1"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "test.steady.dev/v1", Kind: "Widget", Name: "owner", UID: "o-1",
				Controller: new(true), BlockOwnerDeletion: new(true)}}},
		Spec: spec(2)}
	s := &d.Spec
	s.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
		MaxUnavailable: new(intstr.FromString("25%")), MaxSurge: new(intstr.FromString("25%"))}}
	s.RevisionHistoryLimit, s.ProgressDeadlineSeconds = new(int32(10)), new(int32(600))
	ps := &s.Template.Spec
	ps.RestartPolicy, ps.DNSPolicy, ps.SchedulerName = corev1.RestartPolicyAlways, corev1.DNSClusterFirst, corev1.DefaultSchedulerName
	ps.TerminationGracePeriodSeconds, ps.SecurityContext = new(int64(30)), &corev1.PodSecurityContext{}
	c := &ps.Containers[0]
	c.TerminationMessagePath, c.TerminationMessagePolicy, c.ImagePullPolicy = "/dev/termination-log", corev1.TerminationMessageReadFile, corev1.PullIfNotPresent
	c.Ports[0].Protocol = corev1.ProtocolTCP
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."}}}
	w := d.DeepCopy()
	w.Spec = spec(3)
	lm, wm, err := maps(d, w)
	if err != nil {
		b.Fatal(err)
	}
	return lm, wm
}

// TestOverlayNilIsNull: a Go nil map or list mutate set in status (var
// items []any, filled by no append) is JSON null, as jsonpatch.MergePatch
// had it: it removes base's value, and is no empty map or list.
func TestOverlayNilIsNull(t *testing.T) {
	base := map[string]any{"m": map[string]any{"a": int64(1)}, "l": []any{int64(1)}, "k": "v"}
	set := map[string]any{"m": map[string]any(nil), "l": []any(nil), "n": map[string]any{"x": []any(nil), "y": int64(2)}}
	got, err := overlay(base, set)
	if want := `{"k":"v","n":{"y":2}}`; err != nil || mustJSON(t, got) != want {
		t.Errorf("overlay = %s, %v, want %s", mustJSON(t, got), err, want)
	}
	if got, err := overlay(map[string]any(nil), map[string]any{"a": int64(1)}); err != nil || mustJSON(t, got) != `{"a":1}` {
		t.Errorf("overlay on a nil map = %s, %v", mustJSON(t, got), err)
	}
}
