package harness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/steadyk8s/steady"
	"github.com/steadyk8s/steady/ownership"
)

// The ways of keeping a Deployment child that [MeasureLiveChildren]
// compares.
const (
	// LiveCreateOrUpdate is steady's ownership.CreateOrUpdate, the child's
	// fields set one by one on the child as read (docs/ownership.md's Do).
	LiveCreateOrUpdate = "steady CreateOrUpdate"
	// LiveApply is steady's ownership.Apply with client-go's apply
	// configuration.
	LiveApply = "steady Apply"
	// LiveControllerutil is the hand-written code: controller-runtime's
	// controllerutil.CreateOrUpdate with the same mutate and
	// SetControllerReference, on the manager's client.
	LiveControllerutil = "controllerutil"
)

// LiveVariants are the ways [MeasureLiveChildren] compares.
var LiveVariants = []string{LiveCreateOrUpdate, LiveApply, LiveControllerutil}

// The passes of [MeasureLiveChildren], in order.
const (
	LivePassCreate    = "create"
	LivePassFirst     = "first pass after the create"
	LivePassOther     = "after another field manager's change"
	LivePassStatus    = "after a status change"
	LivePassRestart   = "first pass after a restart"
	LivePassRestarted = "second pass after the restart"
)

// LivePasses are the passes of [MeasureLiveChildren], in order.
var LivePasses = []string{LivePassCreate, LivePassFirst, LivePassOther, LivePassStatus, LivePassRestart, LivePassRestarted}

// LiveChildCost is what one way of keeping n Deployment children cost.
type LiveChildCost struct {
	Variant  string
	Children int
	// Passes holds, per pass (LivePasses), the requests the operator's
	// client made in it, by verb.
	Passes map[string]Counts
	// OthersLost counts the children on which another field manager's
	// label or spec.minReadySeconds was gone after the last pass.
	OthersLost int
	// Wall is the variant's whole run.
	Wall time.Duration
}

// PerChild is the requests per child of pass, and the writes among them.
func (c LiveChildCost) PerChild(pass string) (requests, writes float64) {
	counts := c.Passes[pass]
	n := float64(c.Children)
	return float64(counts.Requests(func(Key) bool { return true })) / n, float64(counts.Requests(Key.Write)) / n
}

// liveOtherManager is the field manager of the other writer (an autoscaler,
// kubectl) that changes every child.
const liveOtherManager = "bench-other-writer"

// MeasureLiveChildren keeps n Deployments, each the child of a ConfigMap
// owner, under the deployment controller of env's kube-controller-manager
// (which writes their status and makes their ReplicaSets), one way per
// variant, in a namespace of its own, and counts the requests of the
// operator's client per pass over every owner, the way a reconcile calls
// it: creating the children; once the deployment controller has written
// their status; once another field manager has set a label and
// spec.minReadySeconds on each; once each child's status changed again;
// and, with a new manager (a restarted process, nothing remembered), twice.
// workers calls run at once.
func MeasureLiveChildren(ctx context.Context, cfg *rest.Config, env client.Client, variants []string, n, workers int, logf func(string, ...any)) ([]LiveChildCost, error) {
	var out []LiveChildCost
	for _, v := range variants {
		cost, err := measureLive(ctx, cfg, env, v, n, workers, logf)
		if err != nil {
			return out, fmt.Errorf("live children, %s: %w", v, err)
		}
		out = append(out, cost)
	}
	return out, nil
}

func measureLive(ctx context.Context, cfg *rest.Config, env client.Client, variant string, n, workers int, logf func(string, ...any)) (LiveChildCost, error) {
	start := time.Now()
	cost := LiveChildCost{Variant: variant, Children: n, Passes: map[string]Counts{}}
	ns := "live-" + strings.ReplaceAll(strings.ReplaceAll(variant, " ", "-"), "steady-", "")
	ns = strings.ToLower(ns)
	if err := env.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return cost, err
	}
	defer func() {
		// The namespace controller deletes the children and their
		// ReplicaSets; the next variant does not wait for it.
		_ = env.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}()
	owners := make([]*corev1.ConfigMap, n)
	err := forEach(ctx, n, workers*4, func(i int) error {
		owners[i] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%05d", i)},
			Data: map[string]string{"image": "registry.example/app:1"}}
		return env.Create(ctx, owners[i])
	})
	if err != nil {
		return cost, err
	}

	counter := &Counter{}
	proc, err := startLiveProcess(ctx, cfg, counter, ns)
	if err != nil {
		return cost, err
	}
	defer func() { proc.stop() }()
	ensure := liveEnsure(variant)
	pass := func(name string) error {
		before := counter.Snapshot()
		err := forEach(ctx, n, workers, func(i int) error { return ensure(ctx, proc, owners[i]) })
		cost.Passes[name] = counter.Snapshot().Sub(before)
		req, w := cost.PerChild(name)
		logf("  live children, %s, %d: %s: %.3f requests per child (%.3f writes): %s", variant, n, name, req, w, cost.Passes[name])
		return err
	}
	if err := pass(LivePassCreate); err != nil {
		return cost, err
	}
	if err := settled(ctx, proc.mgr.GetCache(), env, ns, n); err != nil {
		return cost, err
	}
	if err := pass(LivePassFirst); err != nil {
		return cost, err
	}
	// Another field manager sets a label and spec.minReadySeconds on every
	// child, as an autoscaler or kubectl would set a field of its own.
	err = forEach(ctx, n, workers*4, func(i int) error {
		ac := appsv1ac.Deployment(owners[i].Name, ns).WithLabels(map[string]string{"other": "set"}).
			WithSpec(appsv1ac.DeploymentSpec().WithMinReadySeconds(5))
		return env.Apply(ctx, ac, client.FieldOwner(liveOtherManager), client.ForceOwnership)
	})
	if err != nil {
		return cost, err
	}
	if err := settled(ctx, proc.mgr.GetCache(), env, ns, n); err != nil {
		return cost, err
	}
	if err := pass(LivePassOther); err != nil {
		return cost, err
	}
	// Each child's status changes, as under a workload's own controller.
	err = forEach(ctx, n, workers*4, func(i int) error {
		d := &appsv1.Deployment{}
		if err := env.Get(ctx, types.NamespacedName{Namespace: ns, Name: owners[i].Name}, d); err != nil {
			return err
		}
		patch := client.MergeFrom(d.DeepCopy())
		d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: "BenchObserved", Status: corev1.ConditionTrue,
			Reason: "Bench", Message: "a status change by another writer", LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now()})
		return env.Status().Patch(ctx, d, patch)
	})
	if err != nil {
		return cost, err
	}
	if err := settled(ctx, proc.mgr.GetCache(), env, ns, n); err != nil {
		return cost, err
	}
	if err := pass(LivePassStatus); err != nil {
		return cost, err
	}
	// A restart: a new process remembers nothing.
	proc.stop()
	if proc, err = startLiveProcess(ctx, cfg, counter, ns); err != nil {
		return cost, err
	}
	if err := settled(ctx, proc.mgr.GetCache(), env, ns, n); err != nil {
		return cost, err
	}
	if err := pass(LivePassRestart); err != nil {
		return cost, err
	}
	if err := settled(ctx, proc.mgr.GetCache(), env, ns, n); err != nil {
		return cost, err
	}
	if err := pass(LivePassRestarted); err != nil {
		return cost, err
	}
	var list appsv1.DeploymentList
	if err := env.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return cost, err
	}
	for _, d := range list.Items {
		if d.Labels["other"] != "set" || d.Spec.MinReadySeconds != 5 {
			cost.OthersLost++
		}
	}
	cost.Wall = time.Since(start)
	return cost, nil
}

// liveProcess is the operator's process: a manager whose cache holds the
// namespace's ConfigMaps and Deployments, and the client a reconcile uses.
type liveProcess struct {
	mgr    ctrl.Manager
	client client.Client // steady.NewClient(mgr)
	stop   func()
}

func startLiveProcess(ctx context.Context, cfg *rest.Config, counter *Counter, ns string) (*liveProcess, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return counter.Wrap(rt) })
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  NewScheme(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	p := &liveProcess{mgr: mgr, client: steady.NewClient(mgr), stop: func() { once.Do(func() { cancel(); <-done }) }}
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &appsv1.Deployment{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			p.stop()
			return nil, err
		}
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		p.stop()
		return nil, errors.New("the manager's cache did not sync")
	}
	return p, nil
}

// liveEnsure returns variant's reconcile of one owner: its Deployment as
// the owner's data says.
func liveEnsure(variant string) func(ctx context.Context, p *liveProcess, owner *corev1.ConfigMap) error {
	labels := func(owner *corev1.ConfigMap) map[string]string { return map[string]string{"app": owner.Name} }
	// mutate sets the fields this operator owns one by one on the child as
	// read; replicas and the selector only on create.
	mutate := func(owner *corev1.ConfigMap, d *appsv1.Deployment) {
		if d.CreationTimestamp.IsZero() {
			d.Spec.Replicas = ptr.To(int32(0))
			d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels(owner)}
		}
		if d.Labels == nil {
			d.Labels = map[string]string{}
		}
		d.Labels["app"] = owner.Name
		if d.Spec.Template.Labels == nil {
			d.Spec.Template.Labels = map[string]string{}
		}
		d.Spec.Template.Labels["app"] = owner.Name
		for i := range d.Spec.Template.Spec.Containers {
			if c := &d.Spec.Template.Spec.Containers[i]; c.Name == "app" {
				c.Image = owner.Data["image"]
				return
			}
		}
		d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "app", Image: owner.Data["image"]})
	}
	child := func(owner *corev1.ConfigMap) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: owner.Namespace, Name: owner.Name}}
	}
	switch variant {
	case LiveCreateOrUpdate:
		return func(ctx context.Context, p *liveProcess, owner *corev1.ConfigMap) error {
			d := child(owner)
			_, err := ownership.CreateOrUpdate(ctx, p.client, owner, d, func() error { mutate(owner, d); return nil })
			return err
		}
	case LiveApply:
		return func(ctx context.Context, p *liveProcess, owner *corev1.ConfigMap) error {
			ac := appsv1ac.Deployment(owner.Name, owner.Namespace).WithLabels(labels(owner)).
				WithSpec(appsv1ac.DeploymentSpec().WithReplicas(0).
					WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels(owner))).
					WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels(owner)).
						WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("app").WithImage(owner.Data["image"])))))
			_, err := ownership.Apply(ctx, p.client, owner, ac, "bench-operator")
			return err
		}
	case LiveControllerutil:
		return func(ctx context.Context, p *liveProcess, owner *corev1.ConfigMap) error {
			d := child(owner)
			c := p.mgr.GetClient()
			_, err := controllerutil.CreateOrUpdate(ctx, c, d, func() error {
				mutate(owner, d)
				return controllerutil.SetControllerReference(owner, d, c.Scheme())
			})
			if apierrors.IsAlreadyExists(err) {
				return nil // the cache did not show our create yet: the next pass converges it
			}
			return err
		}
	}
	return func(context.Context, *liveProcess, *corev1.ConfigMap) error {
		return fmt.Errorf("unknown live-children variant %q (want %s)", variant, strings.Join(LiveVariants, ", "))
	}
}

// settled waits until the deployment controller has written the status of
// every one of the n Deployments of ns for their generation (no status
// write pending) and the cache shows each at its live resourceVersion.
func settled(ctx context.Context, cache client.Reader, env client.Client, ns string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	last := ""
	for {
		var live, cached appsv1.DeploymentList
		err := env.List(ctx, &live, client.InNamespace(ns))
		if err == nil {
			err = cache.List(ctx, &cached, client.InNamespace(ns))
		}
		if err != nil {
			return err
		}
		rv := map[string]string{}
		for _, d := range cached.Items {
			rv[d.Name] = d.ResourceVersion
		}
		pending := 0
		for _, d := range live.Items {
			if d.Status.ObservedGeneration != d.Generation || rv[d.Name] != d.ResourceVersion {
				pending++
			}
		}
		if len(live.Items) == n && pending == 0 {
			return nil
		}
		last = fmt.Sprintf("%d of %d Deployments, %d not settled", len(live.Items), n, pending)
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the deployment controller and the cache: %w (%s)", ctx.Err(), last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// forEach runs f(0..n-1) from workers goroutines and returns the first
// error.
func forEach(ctx context.Context, n, workers int, f func(i int) error) error {
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range max(workers, 1) {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("item %d: %w", i, err)
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}
