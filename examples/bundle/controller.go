package bundle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/steadyk8s/steady"
	"github.com/steadyk8s/steady/applyset"
	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/finalizer"
	"github.com/steadyk8s/steady/indexer"
	"github.com/steadyk8s/steady/reconcile"

	bundlev1alpha1 "github.com/steadyk8s/steady/examples/bundle/api/v1alpha1"
)

const (
	// Finalizer prunes every member of a Bundle that is being deleted.
	Finalizer = "bundle.examples.steady.dev/prune"
	// FieldManager is the field manager of the members' server-side applies.
	FieldManager = "bundle-controller"
	// Tooling is the ApplySet tooling annotation of Bundles. It names this
	// example, not kubectl: kubectl refuses to prune a set another tool
	// manages, and so does applyset.
	Tooling = "bundle-controller/v1alpha1"
)

// BundlesByConfigMap indexes Bundles by the ConfigMaps their manifests come
// from: which Bundles read ConfigMap X is one lookup.
var BundlesByConfigMap = indexer.New("spec.manifests.configMap.name", func(b *bundlev1alpha1.Bundle) []string {
	var names []string
	for _, m := range b.Spec.Manifests {
		if m.ConfigMap != nil {
			names = append(names, m.ConfigMap.Name)
		}
	}
	return names
})

// Reconciler reconciles Bundles.
type Reconciler struct {
	// Client is the manager's client. Its typed reads (Bundles, ConfigMaps)
	// come from the cache; applyset reads members as unstructured objects,
	// which a manager's client with default options reads from the API
	// server.
	Client client.Client
	// Name is the controller's name; empty means "bundle".
	Name string
	// WaitCurrent bounds how long one reconcile waits for the members to
	// become Current before it prunes; 5s when zero. A Bundle whose members
	// are not Current yet is requeued and nothing is pruned, so the old
	// objects stay until the new ones are ready.
	WaitCurrent time.Duration
	// Resync re-applies converged Bundles this often, to repair drift of
	// the members (which are not watched: they can be of any kind); 10
	// minutes when zero.
	Resync time.Duration

	// apiReader reads from the API server (mgr.GetAPIReader()): the check
	// that pruned objects are gone.
	apiReader  client.Reader
	reconciler crreconcile.Reconciler
}

// +kubebuilder:rbac:groups=bundle.examples.steady.dev,resources=bundles,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=bundle.examples.steady.dev,resources=bundles/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch

// A Bundle applies arbitrary objects, so its controller needs to create,
// patch, list and delete whatever the Bundles may hold. Narrow this rule to
// the kinds your Bundles use; cluster-admin-like rights are the price of a
// generic applier.
// +kubebuilder:rbac:groups=*,resources=*,verbs=get;list;watch;create;patch;delete

// SetupWithManager registers the index and the Bundle controller. applyset
// writes the Bundle's labels and annotations, and we write its status:
// neither bumps the generation, neither needs a reconcile (NewController's
// default predicate).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = steady.NewClient(mgr)
	}
	r.apiReader = mgr.GetAPIReader() // prune reads members through it
	rec, err := reconcile.NewController[bundlev1alpha1.Bundle](mgr, r.reconcile,
		reconcile.WithFinalizer(Finalizer, finalizer.Func(r.prune)),
		reconcile.WithReadySummary(conditions.SummaryOptions{ConditionTypes: []string{
			bundlev1alpha1.AppliedCondition,
			bundlev1alpha1.MembersCurrentCondition,
		}}),
		reconcile.WithObservedGeneration{},
		// Reconciling and Stalled are this controller's alone: its values
		// win on a conflict.
		reconcile.WithOwnedConditions{conditions.Reconciling, conditions.Stalled}).
		Named(cmp.Or(r.Name, "bundle")).
		Client(r.Client).
		Index(BundlesByConfigMap).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.bundlesOfConfigMap)).
		Complete()
	r.reconciler = rec
	return err
}

// Reconcile implements reconcile.Reconciler; SetupWithManager must have run.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.reconciler.Reconcile(ctx, req)
}

// bundlesOfConfigMap maps a ConfigMap to the Bundles of its namespace that
// read it.
func (r *Reconciler) bundlesOfConfigMap(ctx context.Context, cm client.Object) []ctrl.Request {
	var list bundlev1alpha1.BundleList
	if err := BundlesByConfigMap.List(ctx, r.Client, &list, cm.GetName(), client.InNamespace(cm.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the Bundles of a ConfigMap", "configmap", client.ObjectKeyFromObject(cm))
		return nil
	}
	reqs := make([]ctrl.Request, 0, len(list.Items))
	for _, b := range list.Items {
		reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&b)})
	}
	return reqs
}

func (r *Reconciler) set(b *bundlev1alpha1.Bundle, opts ...applyset.SetOption) (*applyset.Set, error) {
	opts = append([]applyset.SetOption{applyset.FieldManager(FieldManager), applyset.Tooling(Tooling)}, opts...)
	return applyset.New(r.Client, b, opts...)
}

// reconcile applies the Bundle's manifests and prunes what left them.
func (r *Reconciler) reconcile(ctx context.Context, b *bundlev1alpha1.Bundle) (ctrl.Result, error) {
	objs, err := r.manifests(ctx, b)
	var missing *configMapMissingError
	switch {
	case errors.As(err, &missing):
		// Stalled until the ConfigMap appears: its watch brings us back.
		stall(b, bundlev1alpha1.ReasonConfigMapMissing, err)
		return ctrl.Result{}, nil
	case errors.As(err, new(*applyset.ParseError)):
		// Stalled until the Bundle (or its ConfigMap) changes: retrying
		// would parse the same bytes again.
		stall(b, bundlev1alpha1.ReasonManifestError, err)
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, err // a failed read: retried with backoff
	}

	wait := r.WaitCurrent
	if wait == 0 {
		wait = 5 * time.Second
	}
	set, err := r.set(b, applyset.WaitCurrent(wait))
	if err != nil {
		return ctrl.Result{}, err
	}
	b.Status.ApplySetID = set.ID()
	res, err := set.Apply(ctx, objs)
	record(b, res)

	var invalid *applyset.ValidationError
	var notCurrent *applyset.NotCurrentError
	var tooling *applyset.ToolingError
	switch {
	case errors.As(err, &invalid), errors.As(err, &tooling):
		// The input is wrong (a field the schema refuses, an unknown kind,
		// a parent another tool manages): nothing more was written. A kind
		// may become known when its CRD is installed, so look again later,
		// slowly.
		stall(b, bundlev1alpha1.ReasonManifestError, err)
		return ctrl.Result{RequeueAfter: time.Minute}, nil
	case errors.As(err, &notCurrent):
		conditions.MarkTrue(b, bundlev1alpha1.AppliedCondition, bundlev1alpha1.ReasonApplied, "%d objects applied; pruning waits until they are Current", len(objs))
		conditions.MarkFalse(b, bundlev1alpha1.MembersCurrentCondition, bundlev1alpha1.ReasonMembersNotCurrent, "%s", notCurrentMessage(notCurrent))
		conditions.MarkReconciling(b, bundlev1alpha1.ReasonMembersNotCurrent, "waiting for %d objects to become Current", len(notCurrent.Objects))
		return ctrl.Result{RequeueAfter: time.Second}, nil
	case err != nil:
		conditions.MarkFalse(b, bundlev1alpha1.AppliedCondition, bundlev1alpha1.ReasonApplyFailed, "%v", err)
		conditions.MarkReconciling(b, bundlev1alpha1.ReasonApplyFailed, "retrying")
		return ctrl.Result{}, err
	}
	conditions.MarkTrue(b, bundlev1alpha1.AppliedCondition, bundlev1alpha1.ReasonApplied, "%d members applied", len(objs))
	conditions.MarkTrue(b, bundlev1alpha1.MembersCurrentCondition, bundlev1alpha1.ReasonMembersCurrent, "")
	conditions.ClearProgress(b)
	resync := r.Resync
	if resync == 0 {
		resync = 10 * time.Minute
	}
	return ctrl.Result{RequeueAfter: resync}, nil
}

// stall reports an error that only a change from outside can fix: Stalled,
// and Applied False with the same reason (so Ready says it too).
func stall(b *bundlev1alpha1.Bundle, reason string, err error) {
	conditions.MarkFalse(b, bundlev1alpha1.AppliedCondition, reason, "%v", err)
	conditions.MarkStalled(b, reason, "%v", err)
}

func notCurrentMessage(e *applyset.NotCurrentError) string {
	var parts []string
	for obj, status := range e.Objects {
		parts = append(parts, obj+": "+status)
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// record writes the per-object results and counts of an apply into the
// status. They describe the last apply that did something (applied, pruned,
// detached or failed an object): an apply that found every member unchanged
// leaves them as they are, so that reconciling a converged Bundle again
// writes nothing.
func record(b *bundlev1alpha1.Bundle, res *applyset.Result) {
	if res == nil {
		return
	}
	objs := make([]bundlev1alpha1.ObjectStatus, 0, len(res.Objects))
	var members int32
	for _, o := range res.Objects {
		s := bundlev1alpha1.ObjectStatus{
			Group:     o.ID.GroupKind.Group,
			Kind:      o.ID.GroupKind.Kind,
			Namespace: o.ID.Namespace,
			Name:      o.ID.Name,
			Action:    string(o.Action),
		}
		if o.Err != nil {
			s.Error = o.Err.Error()
		}
		if o.Action == applyset.Applied || o.Action == applyset.Unchanged {
			members++
		}
		objs = append(objs, s)
	}
	if res.Count(applyset.Unchanged) == len(res.Objects) && sameMembers(b.Status.Objects, objs) {
		return
	}
	b.Status.Objects = objs
	b.Status.Members = members
	b.Status.Applied = int32(res.Count(applyset.Applied))
	b.Status.Unchanged = int32(res.Count(applyset.Unchanged))
	b.Status.Pruned = int32(res.Count(applyset.Pruned))
	b.Status.Failed = int32(res.Count(applyset.Failed))
}

// sameMembers reports whether the status lists as members (applied or
// unchanged) exactly the objects of unchanged.
func sameMembers(status, unchanged []bundlev1alpha1.ObjectStatus) bool {
	key := func(o bundlev1alpha1.ObjectStatus) string { return describe(o) }
	want := map[string]bool{}
	for _, o := range unchanged {
		want[key(o)] = true
	}
	n := 0
	for _, o := range status {
		if o.Action != string(applyset.Applied) && o.Action != string(applyset.Unchanged) {
			continue
		}
		if !want[key(o)] {
			return false
		}
		n++
	}
	return n == len(want)
}

// prune is the finalizer's cleanup: apply the empty set, which deletes every
// member (namespaced objects, then Namespaces, then CRDs), and keep the
// Bundle until they are gone. A Namespace or a CRD takes a while to go (its
// contents are deleted first): the pruned objects still there are kept in
// status.objects and looked at again.
func (r *Reconciler) prune(ctx context.Context, obj client.Object) error {
	b := obj.(*bundlev1alpha1.Bundle)
	set, err := r.set(b)
	if err != nil {
		return err
	}
	res, err := set.Apply(ctx, nil)
	// Earlier passes' pruned objects, and this one's.
	pending := map[bundlev1alpha1.ObjectStatus]bool{}
	for _, o := range b.Status.Objects {
		if o.Action == string(applyset.Pruned) {
			pending[bundlev1alpha1.ObjectStatus{Group: o.Group, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, Action: o.Action}] = true
		}
	}
	if res != nil {
		for _, o := range res.Objects {
			if o.Action == applyset.Pruned {
				pending[bundlev1alpha1.ObjectStatus{Group: o.ID.GroupKind.Group, Kind: o.ID.GroupKind.Kind, Namespace: o.ID.Namespace, Name: o.ID.Name, Action: string(o.Action)}] = true
			}
		}
	}
	var left []bundlev1alpha1.ObjectStatus
	var names []string
	for o := range pending {
		gone, gerr := r.gone(ctx, o)
		if gerr != nil {
			err = errors.Join(err, gerr)
		}
		if !gone {
			left = append(left, o)
			names = append(names, describe(o))
		}
	}
	sort.Slice(left, func(i, j int) bool { return describe(left[i]) < describe(left[j]) })
	sort.Strings(names)
	b.Status.Objects = left
	b.Status.Members = 0
	if err != nil {
		conditions.MarkReconciling(b, bundlev1alpha1.ReasonPruning, "pruning failed, retrying: %v", err)
		return err
	}
	if len(left) > 0 {
		conditions.MarkReconciling(b, bundlev1alpha1.ReasonPruning, "waiting for %d pruned objects to go: %s", len(left), strings.Join(names, ", "))
		return finalizer.InProgress(time.Second, "waiting for %s", strings.Join(names, ", "))
	}
	return nil
}

// gone reports whether a pruned object is gone from the API server.
func (r *Reconciler) gone(ctx context.Context, o bundlev1alpha1.ObjectStatus) (bool, error) {
	u := &unstructured.Unstructured{}
	mapping, err := r.Client.RESTMapper().RESTMapping(schemaGK(o))
	if meta.IsNoMatchError(err) {
		return true, nil // its CRD went: so did it
	}
	if err != nil {
		return false, err
	}
	u.SetGroupVersionKind(mapping.GroupVersionKind)
	err = r.apiReader.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, u)
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading pruned %s: %w", describe(o), err)
	}
	return false, nil
}

func describe(o bundlev1alpha1.ObjectStatus) string {
	kind := o.Kind
	if o.Group != "" {
		kind += "." + o.Group
	}
	if o.Namespace == "" {
		return kind + " " + o.Name
	}
	return kind + " " + o.Namespace + "/" + o.Name
}
