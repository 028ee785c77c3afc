package ownership_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// TestFaults injects API errors between the read and the write: the error
// names the child and says what happened, and the result says what was
// written, no more.
func TestFaults(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	o := owner(t, ns, "owner")
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	conflict := apierrors.NewConflict(gr, "x", errors.New("the object has been modified"))
	internal := apierrors.NewInternalError(errors.New("etcd is sad"))
	seq := 0
	for _, tc := range []struct {
		name        string
		write       error                          // on the write of the object
		hang        bool                           // the write waits for the context to end
		want        controllerutil.OperationResult // what the result says beside the error: "" where nothing was written
		is          func(error) bool
		mention     string // in the error message
		storedImage string
	}{
		{name: "409 on the write", write: conflict, want: "", is: apierrors.IsConflict, mention: "updating", storedImage: "nginx:1"},
		{name: "500 on the write", write: internal, want: "", is: apierrors.IsInternalError, mention: "updating", storedImage: "nginx:1"},
		{name: "timeout on the write", hang: true, want: "", is: func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }, mention: "updating", storedImage: "nginx:1"},
	} {
		for _, fn := range fns {
			seq++
			name := fmt.Sprintf("web-%d", seq)
			t.Run(tc.name+"/"+fn.name, func(t *testing.T) {
				d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				if _, err := fn.fn(ctx, env.Client, o, d, deployment(d, "nginx:1")); err != nil {
					t.Fatal(err)
				}
				fail := func(ctx context.Context, dry bool) error {
					switch {
					case tc.hang && !dry:
						<-ctx.Done()
						return ctx.Err()
					case !dry && tc.write != nil:
						return tc.write
					}
					return nil
				}
				c := interceptor.NewClient(watchClient(t), interceptor.Funcs{
					Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
						uo := &client.UpdateOptions{}
						uo.ApplyOptions(opts)
						if err := fail(ctx, len(uo.DryRun) > 0); err != nil {
							return err
						}
						return c.Update(ctx, obj, opts...)
					},
				})
				wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				d = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				mutate := deployment(d, "nginx:2")
				op, err := fn.fn(wctx, c, o, d, func() error {
					d.Status.ObservedGeneration = 7 // a status change too
					return mutate()
				})
				if err == nil || !tc.is(err) {
					t.Fatalf("error = %v", err)
				}
				if op != tc.want {
					t.Errorf("result %s, want %s", op, tc.want)
				}
				msg := err.Error()
				if !strings.Contains(msg, "Deployment "+ns+"/"+name) {
					t.Errorf("the error does not name the child: %v", err)
				}
				found := false
				for _, m := range strings.Split(tc.mention, "|") {
					found = found || strings.Contains(msg, m)
				}
				if !found {
					t.Errorf("the error does not say %q: %v", tc.mention, err)
				}
				var got appsv1.Deployment
				err = env.Client.Get(ctx, client.ObjectKeyFromObject(d), &got)
				switch {
				case err != nil:
					t.Fatal(err)
				case got.Spec.Template.Spec.Containers[0].Image != tc.storedImage:
					t.Errorf("stored image %s, want %s", got.Spec.Template.Spec.Containers[0].Image, tc.storedImage)
				}
			})
		}
	}
}
