package testenv_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/testenv"
)

// TestFleetMembersAreSeparateControlPlanes starts a fleet of two: each
// member has its own API server and store (the same name holds different
// objects), and killing one leaves the other running.
func TestFleetMembersAreSeparateControlPlanes(t *testing.T) {
	env.Require(t) // needs the binaries, as the shared environment does
	fleet := testenv.NewFleet(2, testenv.WithCRDs{Paths: []string{"testdata/crds"}})
	if err := fleet.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fleet.Stop(); err != nil {
			t.Error(err)
		}
	})
	fleet.Require(t)
	a, b := fleet.Members[0], fleet.Members[1]
	if a.Config.Host == b.Config.Host {
		t.Fatalf("both members serve at %s", a.Config.Host)
	}
	ctx := context.Background()
	for i, e := range fleet.Members {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "same-name"},
			Data: map[string]string{"member": string(rune('a' + i))}}
		if err := e.Client.Create(ctx, cm); err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
	}
	var got [2]corev1.ConfigMap
	for i, e := range fleet.Members {
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "same-name"}, &got[i]); err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		if want := string(rune('a' + i)); got[i].Data["member"] != want {
			t.Errorf("member %d holds member %q's ConfigMap", i, got[i].Data["member"])
		}
	}
	if got[0].UID == got[1].UID {
		t.Errorf("both members' ConfigMaps have UID %s", got[0].UID)
	}

	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := a.Client.Delete(ctx, &got[0]); err != nil {
		t.Fatalf("member 0 after member 1 was killed: %v", err)
	}
	if err := a.Client.Get(ctx, client.ObjectKeyFromObject(&got[0]), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("member 0: read after delete: %v, want NotFound", err)
	}
	if err := b.Client.Get(ctx, client.ObjectKeyFromObject(&got[1]), &corev1.ConfigMap{}); err == nil {
		t.Error("member 1 still answers after Kill")
	}
}
