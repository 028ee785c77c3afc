package ownership

import (
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

// OwnerKindLabel and [OwnerNameLabel] are the labels in which
// [CreateOrUpdate] and [Apply], passed [RecordOwner],
// record on a child who its controller is, when both values are valid
// label values (at most 63 characters of [A-Za-z0-9-_.], the first and
// last a letter or digit): the owner's kind, as "<Kind>.<group>"
// ("Bucket.example.com"; "<Kind>" for the core group: "Secret"), and its
// name. Not its UID: a restore from a backup creates the owner again with a
// new UID, and its children without their owner references (Velero strips
// them); the next reconcile takes back a child without a controller that
// records the owner, and refuses, with an [*AlreadyOwnedError], one that
// records another (with or without [RecordOwner]: the record is always
// read). The owner's namespace is not recorded: a namespaced owner is in
// its child's namespace (a reference cannot cross namespaces), and its
// kind says whether it is namespaced. An owner whose kind or name is not a
// label value (a name of more than 63 characters, an RBAC name with ':')
// is recorded in the annotation "ownership.steady.dev/owner" instead; a
// child written with the record carries one form, never both.
//
// Labels, not an annotation, because most children already carry labels:
// two more entries in a map the child has cost the informer cache far less
// than a map of annotations of its own (about 450 bytes per child). Nothing
// selects on them unless told to; both survive a restore.
const OwnerKindLabel = "ownership.steady.dev/owner-kind"

// OwnerNameLabel is the name of a child's controller; see [OwnerKindLabel].
const OwnerNameLabel = "ownership.steady.dev/owner-name"

// ownerAnnotation is the record of a child's controller when it does not
// fit in [OwnerKindLabel] and [OwnerNameLabel] (its name or kind is not a
// label value): "<group>/<Kind>/<namespace>/<name>" of the owner, the
// group empty for the core group and the namespace empty for a
// cluster-scoped owner ("rbac.authorization.k8s.io/ClusterRole//system:view").
// A child records an owner when either form does, and is refused if either
// form records another.
const ownerAnnotation = "ownership.steady.dev/owner"

// The forms of a record, as AlreadyOwnedError.RecordedIn names them.
const (
	inLabels     = "labels"
	inAnnotation = "annotation"
)

// formKeys names the keys of a form of the record: "labels ... and ...",
// or "annotation ...".
func formKeys(form string) string {
	if form == inLabels {
		return "labels " + OwnerKindLabel + " and " + OwnerNameLabel
	}
	return "annotation " + ownerAnnotation
}

// ownerRecord is the record of one owner: what its children carry.
type ownerRecord struct {
	// group, kind, namespace and name are the owner's (namespace "" for
	// a cluster-scoped owner).
	group, kind, namespace, name string
	// kindLabel is [OwnerKindLabel]'s value.
	kindLabel string
}

// labeled says that r is written in the labels (both values are label
// values), else in [ownerAnnotation]. It is asked only where a record is
// read or written, so that a call without one pays for no validation.
func (r ownerRecord) labeled() bool {
	return r.kind != "" && r.name != "" &&
		len(validation.IsValidLabelValue(r.kindLabel)) == 0 && len(validation.IsValidLabelValue(r.name)) == 0
}

// newRecord is the record of the owner that ref references, in namespace
// ("" for a cluster-scoped owner).
func newRecord(ref metav1.OwnerReference, namespace string) ownerRecord {
	k := newOwnerKind(ref.APIVersion, ref.Kind)
	return k.record(ref.Name, namespace)
}

// ownerKind is what a reference to an owner, and its record, take from
// the owner's kind alone, computed once per call for the reference and
// the record.
type ownerKind struct {
	// apiVersion and kind are the reference's; group is apiVersion's.
	apiVersion, group, kind string
	// kindLabel is [OwnerKindLabel]'s value: "<Kind>.<group>", or
	// "<Kind>" for the core group.
	kindLabel string
}

// newOwnerKind is the [ownerKind] of the owners a reference of apiVersion
// and kind names.
func newOwnerKind(apiVersion, kind string) ownerKind {
	k := ownerKind{apiVersion: apiVersion, group: groupOf(apiVersion), kind: kind, kindLabel: kind}
	if k.group != "" {
		k.kindLabel = kind + "." + k.group
	}
	return k
}

// record is the record of the owner of kind k named name, in namespace
// ("" for a cluster-scoped owner).
func (k *ownerKind) record(name, namespace string) ownerRecord {
	return ownerRecord{group: k.group, kind: k.kind, namespace: namespace, name: name, kindLabel: k.kindLabel}
}

// form is the form r is written in: inLabels or inAnnotation.
func (r ownerRecord) form() string {
	if r.labeled() {
		return inLabels
	}
	return inAnnotation
}

// annotation is the [ownerAnnotation] value of r's owner.
func (r ownerRecord) annotation() string {
	return r.group + "/" + r.kind + "/" + r.namespace + "/" + r.name
}

// recordedOn is what an object's owner record holds ("": not set).
type recordedOn struct {
	kind, name string // OwnerKindLabel and OwnerNameLabel
	annotation string // ownerAnnotation
}

// recordOf reads obj's owner record.
func recordOf(obj client.Object) recordedOn {
	l, a := obj.GetLabels(), obj.GetAnnotations()
	return recordedOn{kind: l[OwnerKindLabel], name: l[OwnerNameLabel], annotation: a[ownerAnnotation]}
}

// labels reports whether the labels hold a record (either label).
func (o recordedOn) labels() bool { return o.kind != "" || o.name != "" }

// none reports whether obj records no owner in either form.
func (o recordedOn) none() bool { return !o.labels() && o.annotation == "" }

// labelsRecord reports whether the labels record r's owner.
func (o recordedOn) labelsRecord(r ownerRecord) bool {
	return o.kind == r.kindLabel && o.name == r.name && o.name != ""
}

// annotationRecords reports whether the annotation records r's owner. The
// namespace of a namespaced owner is not compared: it is the child's own
// (a reference cannot cross namespaces), and a restore that maps
// namespaces moves the child and its owner to another one. A namespaced
// owner and a cluster-scoped one of the same name are told apart.
func (o recordedOn) annotationRecords(r ownerRecord) bool {
	parts := strings.Split(o.annotation, "/")
	if len(parts) != 4 || parts[0] != r.group || parts[1] != r.kind || parts[3] != r.name {
		return false
	}
	return parts[2] == r.namespace || (parts[2] != "" && r.namespace != "")
}

// ours reports whether a form records r's owner.
func (o recordedOn) ours(r ownerRecord) bool {
	return o.labelsRecord(r) || (o.annotation != "" && o.annotationRecords(r))
}

// other returns the first form that records another owner than r's
// (inLabels or inAnnotation, "" for none) and that owner, described.
func (o recordedOn) other(r ownerRecord) (form, owner string) {
	if o.labels() && !o.labelsRecord(r) {
		return inLabels, r.describeLabels(o.kind, o.name)
	}
	if o.annotation != "" && !o.annotationRecords(r) {
		return inAnnotation, r.describeRecord(o.annotation)
	}
	return "", ""
}

// current reports whether the record is r's as r writes it: no form
// records another owner, and r's form records r's owner (the labels, or
// the annotation, namespace and all).
func (o recordedOn) current(r ownerRecord) bool {
	if form, _ := o.other(r); form != "" {
		return false
	}
	if r.labeled() {
		return o.labelsRecord(r)
	}
	return o.annotation != "" && o.annotation == r.annotation()
}

// describe describes each form o holds, beside r's owner: "Kind name
// (labels)", "Kind namespace/name (annotation)", or both.
func (o recordedOn) describe(r ownerRecord) string {
	var out []string
	if o.labels() {
		out = append(out, r.describeLabels(o.kind, o.name)+" ("+inLabels+")")
	}
	if o.annotation != "" {
		out = append(out, r.describeRecord(o.annotation)+" ("+inAnnotation+")")
	}
	return strings.Join(out, " and ")
}

// describeRecord names the owner an [ownerAnnotation] value records, beside
// r's owner, as "Kind namespace/name" (see ownerRecord.kindName), or returns
// the value quoted when it is not one.
func (r ownerRecord) describeRecord(rec string) string {
	parts := strings.Split(rec, "/")
	if len(parts) != 4 || parts[1] == "" || parts[3] == "" {
		return strconv.Quote(rec)
	}
	kind := r.kindName(parts[1], parts[0])
	if parts[2] == "" {
		return kind + " " + parts[3]
	}
	return kind + " " + parts[2] + "/" + parts[3]
}

// describeLabels names the owner [OwnerKindLabel] and [OwnerNameLabel]
// record, beside r's owner, as "Kind name" (see ownerRecord.kindName; the
// labels do not say whether the owner is namespaced), or quotes both
// values when one is missing.
func (r ownerRecord) describeLabels(kind, name string) string {
	if kind == "" || name == "" {
		return fmt.Sprintf("%s=%q %s=%q", OwnerKindLabel, kind, OwnerNameLabel, name)
	}
	k, group, _ := strings.Cut(kind, ".")
	return r.kindName(k, group) + " " + name
}

// kindName names a recorded owner's kind beside r's owner: the kind alone,
// as errors name objects, unless it is r's kind of another group
// (Service.serving.knative.dev beside a core Service, or the other way
// round), which is named with its group, "Kind.group", or "Kind (core
// group)".
func (r ownerRecord) kindName(kind, group string) string {
	switch {
	case kind != r.kind || group == r.group:
		return kind
	case group == "":
		return kind + " (core group)"
	default:
		return kind + "." + group
	}
}

// writeRecord writes r's form of the record on child and removes the
// other form.
func writeRecord(child client.Object, r ownerRecord) {
	l, a := child.GetLabels(), child.GetAnnotations()
	if r.labeled() {
		l = object.CopyMap(l, 2)
		l[OwnerKindLabel], l[OwnerNameLabel] = r.kindLabel, r.name
		child.SetLabels(l)
		child.SetAnnotations(withKeysOf(a, nil, ownerAnnotation))
		return
	}
	a = object.CopyMap(a, 2)
	a[ownerAnnotation] = r.annotation()
	child.SetAnnotations(a)
	child.SetLabels(withKeysOf(l, nil, OwnerKindLabel, OwnerNameLabel))
}

// removeRecord removes from child each form of its record that records
// r's owner, and leaves one of another owner alone. Of the labels, what is
// left of r's record (one label, the other removed by another writer) is
// removed too: alone, it would refuse every other owner.
func removeRecord(child client.Object, r ownerRecord) {
	o := recordOf(child)
	if o.labels() && (o.kind == "" || o.kind == r.kindLabel) && (o.name == "" || o.name == r.name) {
		l := object.CopyMap(child.GetLabels(), 2)
		delete(l, OwnerKindLabel)
		delete(l, OwnerNameLabel)
		child.SetLabels(l)
	}
	if o.annotation != "" && o.annotationRecords(r) {
		a := object.CopyMap(child.GetAnnotations(), 2)
		delete(a, ownerAnnotation)
		child.SetAnnotations(a)
	}
}

// removeOthers removes from child each form of its record that records
// another owner than r's (a label left alone of a record included): a
// child taken without [RecordOwner] is not left recorded for another
// owner. A form that records r's owner stays.
func removeOthers(child client.Object, r ownerRecord) {
	o := recordOf(child)
	if o.labels() && !o.labelsRecord(r) {
		child.SetLabels(withKeysOf(child.GetLabels(), nil, OwnerKindLabel, OwnerNameLabel))
	}
	if o.annotation != "" && !o.annotationRecords(r) {
		child.SetAnnotations(withKeysOf(child.GetAnnotations(), nil, ownerAnnotation))
	}
}

// keepRecord makes child's owner record live's, form for form (none when
// live is nil: a child to create), whatever mutate did to it: the record
// decides whose child it is, and it is not the mutate's to drop (a mutate
// that builds the labels or annotations anew) nor to set (a mutate that copies
// its owner's labels onto the child copies the owner's own record, of
// its owner: taken for the child's, it would refuse the child). It
// returns that record, child's now (recordOf(child)).
func keepRecord(child, live client.Object) recordedOn {
	var want recordedOn
	if live != nil {
		want = recordOf(live)
	}
	if recordOf(child) == want {
		return want
	}
	var liveLabels, liveAnnotations map[string]string
	if live != nil {
		liveLabels, liveAnnotations = live.GetLabels(), live.GetAnnotations()
	}
	child.SetLabels(withKeysOf(child.GetLabels(), liveLabels, OwnerKindLabel, OwnerNameLabel))
	child.SetAnnotations(withKeysOf(child.GetAnnotations(), liveAnnotations, ownerAnnotation))
	return want
}

// withKeysOf is m with the given keys as from has them (removed where from
// does not have them): m itself when that changes nothing, else a copy
// (nil when empty).
func withKeysOf(m, from map[string]string, keys ...string) map[string]string {
	same := true
	for _, k := range keys {
		v, ok := m[k]
		w, wok := from[k]
		same = same && ok == wok && v == w
	}
	if same {
		return m
	}
	out := object.CopyMap(m, 2)
	for _, k := range keys {
		if v, ok := from[k]; ok {
			out[k] = v
		} else {
			delete(out, k)
		}
	}
	if len(out) == 0 {
		return nil // an apply configuration then carries no empty map, which its field manager would own
	}
	return out
}
