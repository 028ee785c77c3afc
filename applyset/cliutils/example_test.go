package cliutils_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/object"

	"github.com/steadyk8s/steady/applyset"
	"github.com/steadyk8s/steady/applyset/cliutils"
)

// A Result's identities as a cli-utils inventory would hold them.
func ExampleObjMetadataSet() {
	res := &applyset.Result{Objects: []applyset.ObjectResult{
		{ID: applyset.ObjectID{Namespace: "shop", Name: "settings", GroupKind: schema.GroupKind{Kind: "ConfigMap"}}, Action: applyset.Applied},
		{ID: applyset.ObjectID{Namespace: "shop", Name: "web", GroupKind: schema.GroupKind{Group: "apps", Kind: "Deployment"}}, Action: applyset.Pruned},
	}}
	for _, id := range cliutils.ObjMetadataSet(res, applyset.Applied) {
		fmt.Println(id)
	}
	// Without this package: a conversion.
	fmt.Println(object.ObjMetadata(res.Objects[1].ID).String())
	// Output:
	// shop_settings__ConfigMap
	// shop_web_apps_Deployment
}
