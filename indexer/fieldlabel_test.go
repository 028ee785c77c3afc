package indexer_test

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/indexer"
	"github.com/steadyk8s/steady/internal/testapi"
)

// The API server words its refusal of a field label by kind: "field label
// not supported: X" for most, but `field label "X" not supported for Job`
// for Jobs, whose field label conversion kube-apiserver words its own way.
// Each is a *NotRegisteredError, so that
// ownership.ListChildren through a direct client (a kubebuilder suite's
// k8sClient) lists and filters: for Jobs it returned the API server's
// error, and a CronJob reconciled in such a suite never found its Jobs.
func TestEveryKindsRefusalIsNotRegistered(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	c, err := client.New(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		find func() error
	}{
		{"Job", func() error { return find[*batchv1.Job](ctx, c, ns) }},
		{"CronJob", func() error { return find[*batchv1.CronJob](ctx, c, ns) }},
		{"Pod", func() error { return find[*corev1.Pod](ctx, c, ns) }},
		{"Secret", func() error { return find[*corev1.Secret](ctx, c, ns) }},
		{"Event", func() error { return find[*corev1.Event](ctx, c, ns) }},
		{"Service", func() error { return find[*corev1.Service](ctx, c, ns) }},
		{"ReplicaSet", func() error { return find[*appsv1.ReplicaSet](ctx, c, ns) }},
		{"StatefulSet", func() error { return find[*appsv1.StatefulSet](ctx, c, ns) }},
		{"Widget (a CRD)", func() error { return find[*testapi.Widget](ctx, c, ns) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.find()
			var nre *indexer.NotRegisteredError
			if !errors.As(err, &nre) || !apierrors.IsBadRequest(err) {
				t.Errorf("%v, want a *NotRegisteredError around the API server's BadRequest", err)
			}
		})
	}
}

func find[T client.Object](ctx context.Context, c client.Client, ns string) error {
	_, err := indexer.ControllerOwner[T]().Find(ctx, c, c.Scheme(), "Widget.test.steady.dev/x", client.InNamespace(ns))
	return err
}
