package reconcile_test

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/steadyk8s/steady/conditions"
	"github.com/steadyk8s/steady/indexer"
	"github.com/steadyk8s/steady/predicates"
	"github.com/steadyk8s/steady/reconcile"
)

// Team is a cluster-scoped kind of the example: a team owns a ResourceQuota
// in each of its namespaces, which carry its name in a label.
type Team struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            TeamStatus `json:"status,omitempty"`
}

// TeamStatus is what the Team controller reports.
type TeamStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Namespaces         []string           `json:"namespaces,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// GetConditions implements conditions.Getter.
func (t *Team) GetConditions() []metav1.Condition { return t.Status.Conditions }

// SetConditions implements conditions.Setter.
func (t *Team) SetConditions(c []metav1.Condition) { t.Status.Conditions = c }

// DeepCopyObject implements runtime.Object.
func (t *Team) DeepCopyObject() runtime.Object {
	out := &Team{TypeMeta: t.TypeMeta, Status: t.Status}
	t.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Status.Namespaces = append([]string(nil), t.Status.Namespaces...)
	out.Status.Conditions = append([]metav1.Condition(nil), t.Status.Conditions...)
	return out
}

// TeamsByNamespace finds the teams that list a namespace in their status.
var TeamsByNamespace = indexer.New("status.namespaces", func(t *Team) []string { return t.Status.Namespaces })

// The Team controller, wired in one place: For with the manager's client and
// API reader, the GenerationChanged predicate on Teams, the owned
// ResourceQuotas watched and indexed by their controller (for
// ownership.ListChildren), the TeamsByNamespace index, and a watch of
// namespaces that maps one to the teams it belongs to.
func ExampleNewController() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		panic(err)
	}
	reconcileTeam := func(ctx context.Context, t *Team) (ctrl.Result, error) {
		// Create the quotas with ownership.CreateOrUpdate, prune them with
		// ownership.ListChildren; For writes the status once.
		conditions.MarkTrue(t, "QuotasReady", "Applied", "")
		return ctrl.Result{}, nil
	}
	teamsOfNamespace := func(ctx context.Context, ns client.Object) []ctrl.Request {
		reqs := []ctrl.Request{}
		if name := ns.GetLabels()["example.com/team"]; name != "" {
			reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Name: name}})
		}
		teams, _ := TeamsByNamespace.Find(ctx, mgr.GetClient(), mgr.GetScheme(), ns.GetName())
		for _, t := range teams {
			reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Name: t.Name}})
		}
		return reqs
	}
	_, err = reconcile.NewController[Team](mgr, reconcileTeam,
		reconcile.WithReadySummary(conditions.SummaryOptions{ConditionTypes: []string{"QuotasReady"}}),
		reconcile.WithObservedGeneration{}).
		Named("team").
		Owns(&corev1.ResourceQuota{}).
		Index(TeamsByNamespace).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(teamsOfNamespace),
			predicates.GenerationOrMetadataChanged()).
		Complete()
	if err != nil {
		panic(err)
	}
	_ = mgr.Start(ctrl.SetupSignalHandler())
}
