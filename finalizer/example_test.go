package finalizer_test

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/internal/testapi"
)

// The mutators report whether they changed the object, and Ensure refuses an
// object that is already being deleted, before any API call.
func ExampleEnsure() {
	obj := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart"}}
	changed, err := finalizer.Ensure(obj, "example.com/cleanup")
	fmt.Println(changed, err)
	changed, err = finalizer.Ensure(obj, "example.com/cleanup")
	fmt.Println(changed, err)

	now := metav1.Now()
	obj.DeletionTimestamp = &now
	_, err = finalizer.Ensure(obj, "example.com/other")
	var deleting *finalizer.DeletingError
	fmt.Println(errors.As(err, &deleting))
	fmt.Println(err)
	// Output:
	// true <nil>
	// false <nil>
	// true
	// finalizer: not adding example.com/other to shop/cart: the object is being deleted
}
