// Package cliutils converts applyset's identities to those of
// sigs.k8s.io/cli-utils, for programs that already use cli-utils
// inventories. It is apart from applyset because cli-utils/pkg/object
// brings kustomize and cli-runtime into a binary (about 26 MB stripped);
// importing applyset alone does not.
//
// The conversion is also a one-liner without this package, since
// [applyset.ObjectID] has the fields of object.ObjMetadata in the same
// order:
//
//	id := object.ObjMetadata(res.Objects[0].ID)
package cliutils

import (
	"slices"

	"sigs.k8s.io/cli-utils/pkg/object"

	"github.com/steadyk8s/steady/applyset"
)

// ObjMetadataSet returns the identities of the objects of res that had one
// of actions (all objects when none is given), as an object.ObjMetadataSet.
func ObjMetadataSet(res *applyset.Result, actions ...applyset.Action) object.ObjMetadataSet {
	var out object.ObjMetadataSet
	for _, o := range res.Objects {
		if o.ID.Name == "" {
			continue // a kind, not an object
		}
		if len(actions) > 0 && !slices.Contains(actions, o.Action) {
			continue
		}
		out = append(out, object.ObjMetadata(o.ID))
	}
	return out
}
