package soak

import (
	"context"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRemoteCacheListsIntoAFilledList: a replica's cache, listed into a
// list that holds items already (cacheLag lists into a copy of the live
// list), gives exactly what the cache holds: no field of an item that was
// there before survives.
func TestRemoteCacheListsIntoAFilledList(t *testing.T) {
	env.Require(t)
	srv := httptest.NewServer(cacheHandler(env.Client, env.Client.Scheme()))
	defer srv.Close()
	rc := remoteCache{url: srv.URL, scheme: env.Client.Scheme()}
	list := &corev1.NamespaceList{Items: make([]corev1.Namespace, 50)}
	for i := range list.Items {
		list.Items[i].OwnerReferences = []metav1.OwnerReference{{Kind: "User", Name: "x"}}
	}
	if err := rc.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	for _, ns := range list.Items {
		if len(ns.OwnerReferences) != 0 {
			t.Fatalf("namespace %s keeps an owner reference it does not have", ns.Name)
		}
	}
}
