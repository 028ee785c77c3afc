package ownership_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/testapi"
	"github.com/steadyk8s/steady/ownership"
)

var updateGolden = flag.Bool("update", false, "write testdata/*.golden from what the tests see")

// newChildClient is a client on which no child exists: a Get answers
// NotFound at once, and a create is accepted (a UID and resourceVersion
// set) without a store, its request body (the object as JSON) handed to
// sent when sent is not nil. It measures and checks CreateOrUpdate's own
// work on the create path, without an API server.
func newChildClient(tb testing.TB, sent func(obj client.Object, body []byte)) client.Client {
	tb.Helper()
	s := testapi.Scheme()
	return interceptor.NewClient(fake.NewClientBuilder().WithScheme(s).WithRESTMapper(testrestmapper.TestOnlyStaticRESTMapper(s)).Build(), interceptor.Funcs{
		Get: func(_ context.Context, _ client.WithWatch, k client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
			return apierrors.NewNotFound(schema.GroupResource{}, k.Name)
		},
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			if sent != nil {
				body, err := json.Marshal(obj)
				if err != nil {
					return err
				}
				sent(obj, body)
			}
			obj.SetUID("uid-child")
			obj.SetResourceVersion("1")
			return nil
		},
	})
}

// createCase is one call of CreateOrUpdate creating a new child.
type createCase struct {
	name  string
	owner client.Object
	// child returns the child to pass and its mutate.
	child func() (client.Object, ownership.MutateFn)
}

var (
	benchOwner = &testapi.Widget{TypeMeta: metav1.TypeMeta{APIVersion: "test.steady.dev/v1", Kind: "Widget"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "team-a", UID: "uid-owner"}}
	longOwner = &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: strings.Repeat("w", 70), UID: "uid-long"}}
	rbacOwner = &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:steady", UID: "uid-cr"}}
	coreOwner = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "parent", UID: "uid-cm"}}
)

// createCases cover the owner record's forms (labels, annotation), owners
// of the core group and others, typed and unstructured children, a child
// given labels and annotations (some of them the record's, as a mutate
// that copies its owner's labels sets), other owner references, and no
// mutate.
var createCases = []createCase{
	{"configmap", benchOwner, func() (client.Object, ownership.MutateFn) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "team-a"}}
		return cm, func() error {
			cm.Labels = map[string]string{"app": "team", "team": "team-a"}
			cm.Data = map[string]string{"members": "alice\nbob"}
			return nil
		}
	}},
	{"no-mutate", benchOwner, func() (client.Object, ownership.MutateFn) {
		return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "team-a"}}, nil
	}},
	{"no-labels", coreOwner, func() (client.Object, ownership.MutateFn) {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "team-a"}}
		return sa, func() error { sa.AutomountServiceAccountToken = new(false); return nil }
	}},
	{"copied-record", benchOwner, func() (client.Object, ownership.MutateFn) {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "team-a",
			Labels: map[string]string{"given": "yes"}, Annotations: map[string]string{"note": "n"}}}
		return rb, func() error {
			rb.Labels[ownership.OwnerKindLabel] = "Team.example.com"
			rb.Labels[ownership.OwnerNameLabel] = "other"
			rb.Annotations[ownership.OwnerAnnotation] = "example.com/Team/ns/other"
			rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}
			return nil
		}
	}},
	{"annotation-record", longOwner, func() (client.Object, ownership.MutateFn) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "long",
			Labels: map[string]string{ownership.OwnerKindLabel: "Widget.test.steady.dev"}}}
		return cm, func() error { cm.Data = map[string]string{"a": "b"}; return nil }
	}},
	{"cluster-owner", rbacOwner, func() (client.Object, ownership.MutateFn) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "of-role"}}
		return cm, func() error { cm.Labels = map[string]string{"x": "y"}; return nil }
	}},
	{"other-references", benchOwner, func() (client.Object, ownership.MutateFn) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shared"}}
		return cm, func() error {
			cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "parent", UID: "uid-cm"}}
			return nil
		}
	}},
	{"unstructured", benchOwner, func() (client.Object, ownership.MutateFn) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetNamespace("ns")
		u.SetName("team-u")
		return u, func() error {
			u.SetLabels(map[string]string{"app": "team"})
			return unstructured.SetNestedField(u.Object, "v", "data", "k")
		}
	}},
}

// TestCreateRequestBodies: what CreateOrUpdate sends to create a new child
// is, byte for byte, what testdata/create_bodies.golden holds (written
// with -update from the version before the create path was made cheaper):
// the owner record, the controller reference and the caller's fields,
// nothing more or less.
func TestCreateRequestBodies(t *testing.T) {
	var got bytes.Buffer
	for _, tc := range createCases {
		var body []byte
		c := newChildClient(t, func(_ client.Object, b []byte) { body = b })
		child, mutate := tc.child()
		op, err := ownership.CreateOrUpdate(context.Background(), c, tc.owner, child, mutate, ownership.RecordOwner{})
		if err != nil || op != controllerutil.OperationResultCreated {
			t.Fatalf("%s: %v, %v", tc.name, op, err)
		}
		got.WriteString(tc.name + " " + string(body) + "\n")
	}
	path := filepath.Join("testdata", "create_bodies.golden")
	if *updateGolden {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	gotLines, wantLines := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(gotLines), len(wantLines)) {
		var g, w string
		if i < len(gotLines) {
			g = gotLines[i]
		}
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if g != w {
			t.Errorf("request body %d:\n got %s\nwant %s", i, g, w)
		}
	}
}

// TestCreateKeepsCallerMaps: the maps a caller hands in, on the child
// before the call or set by mutate (a labels map shared by all children,
// say), are not written: the owner record goes into a copy, and the record
// a mutate copied is removed from a copy.
func TestCreateKeepsCallerMaps(t *testing.T) {
	shared := map[string]string{"app": "team"}
	copied := map[string]string{"app": "team", ownership.OwnerKindLabel: "Team.example.com", ownership.OwnerNameLabel: "other"}
	given := map[string]string{"given": "yes"}
	annotations := map[string]string{"note": "n", ownership.OwnerAnnotation: "example.com/Team/ns/other"}
	want := []map[string]string{maps.Clone(shared), maps.Clone(copied), maps.Clone(given), maps.Clone(annotations)}
	c := newChildClient(t, nil)
	for _, tc := range []struct {
		owner  client.Object
		mutate func(*corev1.ConfigMap)
	}{
		{benchOwner, func(cm *corev1.ConfigMap) { cm.Labels = shared }},
		{benchOwner, func(cm *corev1.ConfigMap) { cm.Labels = copied; cm.Annotations = annotations }},
		{longOwner, func(cm *corev1.ConfigMap) { cm.Labels = shared; cm.Annotations = annotations }},
		{longOwner, func(cm *corev1.ConfigMap) { cm.Labels = copied }},
		{benchOwner, nil},
		{longOwner, nil},
	} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Labels: given}}
		var mutate ownership.MutateFn
		if tc.mutate != nil {
			mutate = func() error { tc.mutate(cm); return nil }
		}
		if _, err := ownership.CreateOrUpdate(context.Background(), c, tc.owner, cm, mutate, ownership.RecordOwner{}); err != nil {
			t.Fatal(err)
		}
		for i, m := range []map[string]string{shared, copied, given, annotations} {
			if !maps.Equal(m, want[i]) {
				t.Fatalf("caller's map %d written: %v, want %v", i, m, want[i])
			}
		}
	}
}

// BenchmarkCreateOrUpdateCreate is CreateOrUpdate's own cost when it
// creates a new child (the first reconcile of an owner): a ConfigMap with
// labels and data, a Get answered NotFound and a create accepted at once,
// without an API server (the client's own work is the interceptor's, a
// few allocations).
func BenchmarkCreateOrUpdateCreate(b *testing.B) {
	c := newChildClient(b, nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "team-a"}}
		if _, err := ownership.CreateOrUpdate(ctx, c, benchOwner, cm, func() error {
			cm.Labels = map[string]string{"app": "team", "team": "team-a"}
			cm.Data = map[string]string{"members": "alice\nbob"}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}
