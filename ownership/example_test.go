package ownership_test

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady"
	"github.com/steadyk8s/steady/ownership"
)

// A child controlled by another owner is refused with an
// *AlreadyOwnedError naming its controller, and nothing is written;
// ownership.Adopt{} takes it over.
func ExampleAdopt() {
	ctx := context.Background()
	mapper := testrestmapper.TestOnlyStaticRESTMapper(scheme.Scheme)
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithRESTMapper(mapper).Build() // a test's client
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "uid-web"}}
	api := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api", UID: "uid-api"}}
	settings := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "settings"}}
	}

	cm := settings()
	op, err := ownership.CreateOrUpdate(ctx, c, web, cm, nil)
	fmt.Println(op, err, metav1.IsControlledBy(cm, web))

	_, err = ownership.CreateOrUpdate(ctx, c, api, settings(), nil)
	var owned *ownership.AlreadyOwnedError
	fmt.Println(errors.As(err, &owned), owned.Controller)

	cm = settings()
	op, err = ownership.CreateOrUpdate(ctx, c, api, cm, nil, ownership.Adopt{})
	fmt.Println(op, err, metav1.IsControlledBy(cm, api), len(cm.OwnerReferences))
	// Output:
	// created <nil> true
	// true Deployment web
	// updated <nil> true 1
}

// A restore from a backup brings the owner back with a new UID and its
// children without owner references. With ownership.RecordOwner{}, passed
// on every call, the record in OwnerKindLabel and OwnerNameLabel (kind,
// group and name: not the UID) tells whose child it is: its owner takes
// it back, another owner does not take it.
func ExampleRecordOwner() {
	ctx := context.Background()
	mapper := testrestmapper.TestOnlyStaticRESTMapper(scheme.Scheme)
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithRESTMapper(mapper).Build() // a test's client
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "uid-web"}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "settings"}}
	if _, err := ownership.CreateOrUpdate(ctx, c, web, cm, nil, ownership.RecordOwner{}); err != nil {
		panic(err)
	}
	fmt.Println(cm.Labels[ownership.OwnerKindLabel], cm.Labels[ownership.OwnerNameLabel])

	// The restore: web has a new UID, the child no owner references.
	restored := web.DeepCopy()
	restored.UID = "uid-web-restored"
	cm.OwnerReferences = nil
	if err := c.Update(ctx, cm); err != nil {
		panic(err)
	}

	api := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api", UID: "uid-api"}}
	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "settings"}}
	_, err := ownership.CreateOrUpdate(ctx, c, api, cm, nil, ownership.RecordOwner{})
	fmt.Println(err)

	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "settings"}}
	op, err := ownership.CreateOrUpdate(ctx, c, restored, cm, nil, ownership.RecordOwner{})
	fmt.Println(op, err, metav1.IsControlledBy(cm, restored))
	// Output:
	// Deployment.apps web
	// ownership: ConfigMap shop/settings has no controller, but its labels ownership.steady.dev/owner-kind and ownership.steady.dev/owner-name record Deployment web as its owner; not taking it over for Deployment shop/api (pass ownership.Adopt{} to do so)
	// updated <nil> true
}

// An owner whose name is not a label value (an RBAC name with ':', a name
// of more than 63 characters) is recorded in the annotation
// ownership.steady.dev/owner instead, as "<group>/<Kind>/<namespace>/<name>".
// It is read as the labels are.
func ExampleRecordOwner_annotation() {
	ctx := context.Background()
	mapper := testrestmapper.TestOnlyStaticRESTMapper(scheme.Scheme)
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithRESTMapper(mapper).Build() // a test's client
	view := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:view", UID: "uid-view"}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "settings"}}
	if _, err := ownership.CreateOrUpdate(ctx, c, view, cm, nil, ownership.RecordOwner{}); err != nil {
		panic(err)
	}
	fmt.Println(cm.Annotations["ownership.steady.dev/owner"], len(cm.Labels))
	// Output:
	// rbac.authorization.k8s.io/ClusterRole//system:view 0
}

// webDeployment is the desired Deployment of an app: the spec is assigned
// wholesale, as operators do. The fields the API server defaults (and this
// assignment drops) do not make CreateOrUpdate write; a field removed from
// the desired state (a label, a replica count set to 0) does.
func webDeployment(ctx context.Context, c client.Client, app client.Object, replicas int32) (controllerutil.OperationResult, error) {
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: app.GetNamespace(), Name: app.GetName() + "-web"}}
	return ownership.CreateOrUpdate(ctx, c, app, deploy, func() error {
		labels := map[string]string{"app": app.GetName()}
		deploy.Spec = appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.29"}}},
			},
		}
		return nil
	})
}

// CreateOrUpdate in a Reconcile: the result says whether anything was
// written; an error (a conflict after a stale cache read, say) is returned
// for the controller to requeue.
func ExampleCreateOrUpdate() {
	var (
		ctx context.Context
		c   client.Client // the manager's client
		app client.Object // the owner, as read in Reconcile
	)
	op, err := webDeployment(ctx, c, app, 2)
	if err != nil {
		return // requeue
	}
	fmt.Println("deployment", op) // created, updated or unchanged
}

// ListChildren lists what an owner controls, through the indexer package's
// controller-owner index when the manager has it registered.
func ExampleListChildren() {
	var (
		ctx context.Context
		c   client.Client
		app client.Object
	)
	var children corev1.ConfigMapList
	if err := ownership.ListChildren(ctx, c, app, &children); err != nil {
		return
	}
	for _, cm := range children.Items {
		fmt.Println(cm.Name)
	}
}

// Through steady.NewClient(mgr), which carries the manager's API reader, a
// child the manager's cache has not seen yet (a create that answers
// AlreadyExists) is read from the API server, one GET, and the call goes
// on as an update, instead of returning the error.
func ExampleCreateOrUpdate_manager() {
	var (
		ctx context.Context
		mgr ctrl.Manager
		app client.Object
	)
	c := steady.NewClient(mgr) // once per manager, shared by its reconcilers
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: app.GetNamespace(), Name: app.GetName() + "-settings"}}
	op, err := ownership.CreateOrUpdate(ctx, c, app, cm, func() error {
		cm.Data = map[string]string{"mode": "production"}
		return nil
	})
	if err != nil {
		return
	}
	fmt.Println(op)
}

// Apply a child that others edit too: the apply configuration sets the
// image and leaves the replica count to an autoscaler, which keeps it.
func ExampleApply() {
	var (
		ctx context.Context
		c   client.Client // steady.NewClient(mgr)
		app client.Object
	)
	labels := map[string]string{"app": app.GetName()}
	web := appsv1ac.Deployment(app.GetName(), app.GetNamespace()).WithSpec(appsv1ac.DeploymentSpec().
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).
			WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("web").WithImage("nginx:1.27")))))
	op, err := ownership.Apply(ctx, c, app, web, "app-controller")
	if err != nil {
		return
	}
	fmt.Println(op, *web.UID != "") // the answer is in the configuration
}
