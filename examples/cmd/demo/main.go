// Command demo runs steady's example operators together on a local control
// plane, the way `make demo` shows them:
//
//  1. start etcd, kube-apiserver and kube-controller-manager (the garbage
//     collector and the namespace controller) with steady's testenv, and
//     install every example's CRDs;
//  2. run every example's controllers in one controller-runtime manager;
//  3. apply every example's samples (config/samples/*.yaml), wait until
//     every owner is Ready, and print a tree of each owner, its children and
//     their conditions;
//     (a stand-in for the kubelet, which the control plane lacks, runs every
//     Pod to completion);
//  4. delete the samples and wait until every owner, child and external
//     resource has gone (garbage collection and finalizers at work).
//
// With DEMO_KEEP=1 it stops after step 3, prints a kubeconfig for kubectl
// and keeps running until interrupted. DEMO_LOG=1 shows the controllers'
// logs on stderr.
//
// The examples plug in through the registry in examples.go: one entry each.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing/fstest"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/steadyk8s/steady/applyset"
	"github.com/steadyk8s/steady/cmd/kubectl-conditions/check"
	"github.com/steadyk8s/steady/testenv"
)

// demoExample is one example operator as the demo runs it.
type demoExample struct {
	// Name is the example's directory under examples/.
	Name string
	// AddToScheme registers the example's API types.
	AddToScheme func(*runtime.Scheme) error
	// CRDs holds the example's CRDs under config/crd (its embed.FS).
	CRDs fs.FS
	// Start, when set, runs before the manager is built: start what the
	// example needs besides the cluster (an in-process S3 server, say),
	// register its cleanup with demoContext.OnStop and the external state
	// to wait for with demoContext.CheckGone.
	Start func(ctx context.Context, dc *demoContext) error
	// Setup registers the example's controllers (and indexes, runnables)
	// on the manager.
	Setup func(mgr ctrl.Manager, dc *demoContext) error
	// Samples are the manifests the demo applies (config/samples); nil means
	// the example's config/samples directory.
	Samples fs.FS
	// Owners are the kinds whose objects the demo waits for (Ready) and
	// prints as roots of the tree.
	Owners []schema.GroupVersionKind
	// ChildKinds are kinds of children beyond the common ones (see
	// commonChildKinds) that the tree looks for by ownerReference.
	ChildKinds []schema.GroupVersionKind
	// Extra, when set, prints more lines under an owner: the state of an
	// external resource, say.
	Extra func(ctx context.Context, dc *demoContext, owner *unstructured.Unstructured) ([]string, error)
	// Broken, when set, is a manifest (YAML) of an object that cannot
	// become Ready: the demo applies it once every owner is Ready, to show
	// what kubectl-conditions reports, and deletes it with the samples.
	Broken string
}

// demoContext is what the examples' hooks share with the demo.
type demoContext struct {
	// Config reaches the control plane as an admin.
	Config *rest.Config
	// Client is a direct client with the demo's scheme.
	Client client.Client
	// Values holds example-specific state between Start and Setup (the
	// bucket example's fake S3 server, say), by example name.
	Values map[string]any

	onStop []func()
	gone   []goneCheck
}

type goneCheck struct {
	what string
	gone func(context.Context) (bool, error)
}

// OnStop runs f when the demo ends (in reverse order of registration).
func (dc *demoContext) OnStop(f func()) { dc.onStop = append(dc.onStop, f) }

// CheckGone makes the deletion phase also wait until gone reports true:
// an external resource that a finalizer deletes, say. A second check under
// the same name replaces the first, so Extra may call it on every print.
func (dc *demoContext) CheckGone(what string, gone func(context.Context) (bool, error)) {
	for i := range dc.gone {
		if dc.gone[i].what == what {
			dc.gone[i].gone = gone
			return
		}
	}
	dc.gone = append(dc.gone, goneCheck{what: what, gone: gone})
}

// commonChildKinds are the kinds the tree looks for children in.
var commonChildKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "Namespace"},
	{Version: "v1", Kind: "ConfigMap"},
	{Version: "v1", Kind: "Secret"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Version: "v1", Kind: "ResourceQuota"},
	{Version: "v1", Kind: "LimitRange"},
	{Version: "v1", Kind: "Pod"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
}

const (
	sampleNamespace = "default"
	readyTimeout    = 90 * time.Second
	goneTimeout     = 90 * time.Second
)

func main() {
	if os.Getenv("DEMO_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)))
	} else {
		ctrl.SetLogger(logr.Discard())
		klog.SetLogger(logr.Discard())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	keep := os.Getenv("DEMO_KEEP") != "" && os.Getenv("DEMO_KEEP") != "0"
	if err := run(ctx, os.Stdout, keep); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		stop()
		os.Exit(1)
	}
}

// run is the demo. With keep it prints a kubeconfig after the tree and waits
// for ctx to end instead of deleting the samples.
func run(ctx context.Context, out io.Writer, keep bool) (reterr error) {
	began := time.Now()
	examples := registry()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	crds := fstest.MapFS{}
	var names []string
	for _, ex := range examples {
		names = append(names, ex.Name)
		if err := ex.AddToScheme(scheme); err != nil {
			return fmt.Errorf("%s: scheme: %w", ex.Name, err)
		}
		if err := copyCRDs(crds, ex); err != nil {
			return err
		}
	}

	fmt.Fprintf(out, "Starting a control plane (etcd, kube-apiserver, kube-controller-manager) for %s\n", strings.Join(names, ", "))
	env := testenv.New(testenv.WithControllerManager{}, testenv.WithCRDs{FS: crds, Paths: []string{"crds"}}, testenv.WithScheme{Scheme: scheme})
	if err := env.Start(); err != nil {
		var assets *testenv.AssetsError
		if errors.As(err, &assets) {
			return fmt.Errorf("cannot start the control plane: %w", err)
		}
		return fmt.Errorf("starting the control plane: %w", err)
	}
	defer func() { reterr = errors.Join(reterr, env.Stop()) }()
	dc := &demoContext{Config: env.Config, Client: env.Client, Values: map[string]any{}}
	defer func() {
		for _, f := range slices.Backward(dc.onStop) {
			f()
		}
	}()
	for _, ex := range examples {
		if ex.Start != nil {
			if err := ex.Start(ctx, dc); err != nil {
				return fmt.Errorf("%s: start: %w", ex.Name, err)
			}
		}
	}

	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// run may run more than once in a process (tests).
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	for _, ex := range examples {
		if err := ex.Setup(mgr, dc); err != nil {
			return fmt.Errorf("%s: setting up its controllers: %w", ex.Name, err)
		}
	}
	// The control plane has no scheduler and no kubelet: a stand-in runs
	// every Pod to completion.
	if err := mgr.Add(ctrlmanager.RunnableFunc(func(ctx context.Context) error {
		return finishPods(ctx, env.Client)
	})); err != nil {
		return err
	}
	mgrCtx, stopMgr := context.WithCancel(ctx)
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mgrCtx) }()
	defer func() {
		stopMgr()
		if err := <-mgrDone; err != nil {
			reterr = errors.Join(reterr, fmt.Errorf("manager: %w", err))
		}
	}()
	fmt.Fprintf(out, "Control plane up, the controllers of %s running after %s\n\n", strings.Join(names, ", "), since(began))

	samples, err := readSamples(examples)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Applying %d sample objects\n", len(samples))
	for _, s := range samples {
		if s.GetNamespace() == "" {
			namespaced, err := env.Client.IsObjectNamespaced(s)
			if err != nil {
				return fmt.Errorf("sample %s: %w", describe(s), err)
			}
			if namespaced {
				s.SetNamespace(sampleNamespace)
			}
		}
		if err := env.Client.Create(ctx, s.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("applying sample %s: %w", describe(s), err)
		}
	}

	t := &tree{dc: dc, examples: examples}
	owners, err := t.waitReady(ctx, out)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nEvery owner Ready after %s:\n\n", since(began))
	seen, err := t.print(ctx, out, owners)
	if err != nil {
		return err
	}

	kubeconfig, removeKubeconfig, err := adminKubeconfig(env)
	if err != nil {
		return err
	}
	defer removeKubeconfig()
	var ownerKinds []string
	for _, ex := range examples {
		for _, gvk := range ex.Owners {
			ownerKinds = append(ownerKinds, gvk.Kind+"."+gvk.Group)
		}
	}
	fmt.Fprintf(out, "kubectl-conditions (cmd/kubectl-conditions) on the cluster:\n\n")
	if err := showConditions(ctx, out, kubeconfig, []string{"-A"}, []string{"-A", "--all", "--kind", strings.Join(ownerKinds, ",")}); err != nil {
		return err
	}
	broken, err := t.applyBroken(ctx, out)
	if err != nil {
		return err
	}
	samples = append(samples, broken...)
	if len(broken) > 0 {
		if err := showConditions(ctx, out, kubeconfig, []string{"-A"}); err != nil {
			return err
		}
	}

	if keep {
		return keepRunning(ctx, out, kubeconfig)
	}

	fmt.Fprintf(out, "Deleting the samples\n")
	deleted := time.Now()
	for _, s := range slices.Backward(samples) {
		err := env.Client.Delete(ctx, s.DeepCopy(), client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting sample %s: %w", describe(s), err)
		}
	}
	for _, s := range samples {
		seen[objectKey(s)] = s
	}
	if err := t.waitGone(ctx, out, seen); err != nil {
		return err
	}
	external := ""
	if len(dc.gone) > 0 {
		external = fmt.Sprintf(" and %d external resources", len(dc.gone))
	}
	fmt.Fprintf(out, "\nEverything is gone: %d objects%s deleted in %s (total %s)\n",
		len(seen), external, since(deleted), since(began))
	return nil
}

func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Millisecond) }

// copyCRDs adds the example's config/crd files to crds, under crds/.
func copyCRDs(crds fstest.MapFS, ex demoExample) error {
	if ex.CRDs == nil {
		return nil
	}
	return fs.WalkDir(ex.CRDs, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(ex.CRDs, p)
		if err != nil {
			return err
		}
		crds["crds/"+ex.Name+"-"+path.Base(p)] = &fstest.MapFile{Data: data}
		return nil
	})
}

// examplesRoot finds the examples module's directory from the working
// directory (examples/ for `go run ./cmd/demo`, examples/cmd/demo for its
// test).
func examplesRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && strings.Contains(string(data), "module github.com/steadyk8s/steady/examples\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("the examples module (github.com/steadyk8s/steady/examples) is not around %s: run the demo from the repository (make demo)", dir)
		}
	}
}

// readSamples reads every example's samples, in file order, defaulting the
// namespace of namespaced objects to "default".
func readSamples(examples []demoExample) ([]*unstructured.Unstructured, error) {
	root := ""
	var all []*unstructured.Unstructured
	for _, ex := range examples {
		fsys := ex.Samples
		if fsys == nil {
			if root == "" {
				var err error
				if root, err = examplesRoot(); err != nil {
					return nil, err
				}
			}
			fsys = os.DirFS(filepath.Join(root, ex.Name, "config", "samples"))
		}
		objs, err := applyset.ReadFS(fsys, "*")
		if err != nil {
			return nil, fmt.Errorf("%s: samples: %w", ex.Name, err)
		}
		all = append(all, objs...)
	}
	return all, nil
}

type key struct {
	gk              schema.GroupKind
	namespace, name string
}

func objectKey(u *unstructured.Unstructured) key {
	return key{gk: u.GroupVersionKind().GroupKind(), namespace: u.GetNamespace(), name: u.GetName()}
}

// describe names an object as "Kind namespace/name" ("Kind name" when
// cluster-scoped).
func describe(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetKind() + " " + u.GetName()
	}
	return u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
}

// tree finds owners and their children.
type tree struct {
	dc       *demoContext
	examples []demoExample
}

// owners lists every object of the registered owner kinds.
func (t *tree) owners(ctx context.Context) ([]*unstructured.Unstructured, error) {
	var owners []*unstructured.Unstructured
	for _, ex := range t.examples {
		for _, gvk := range ex.Owners {
			list, err := t.list(ctx, gvk)
			if err != nil {
				return nil, err
			}
			owners = append(owners, list...)
		}
	}
	return owners, nil
}

func (t *tree) list(ctx context.Context, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := t.dc.Client.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing %s: %w", gvk.Kind, err)
	}
	out := make([]*unstructured.Unstructured, 0, len(list.Items))
	for i := range list.Items {
		u := &list.Items[i]
		u.SetGroupVersionKind(gvk)
		out = append(out, u)
	}
	return out, nil
}

// waitReady waits until every owner the samples made is Ready for its
// current generation, printing the owners it is still waiting for now and
// then.
func (t *tree) waitReady(ctx context.Context, out io.Writer) ([]*unstructured.Unstructured, error) {
	var owners []*unstructured.Unstructured
	var waiting []string
	start := time.Now()
	lastPrint := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, readyTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		if owners, err = t.owners(ctx); err != nil {
			return false, err
		}
		waiting = waiting[:0]
		for _, o := range owners {
			if ok, why := ready(o); !ok {
				waiting = append(waiting, describe(o)+" ("+why+")")
			}
		}
		if len(waiting) > 0 && time.Since(lastPrint) > 10*time.Second {
			lastPrint = time.Now()
			fmt.Fprintf(out, "  after %s still waiting for %s\n", since(start), strings.Join(waiting, ", "))
		}
		return len(owners) > 0 && len(waiting) == 0, nil
	})
	if err != nil {
		if len(owners) == 0 {
			return nil, fmt.Errorf("no owner appeared within %s", readyTimeout)
		}
		fmt.Fprintln(out, "\nNot every owner became Ready; what there is:")
		_, _ = t.print(ctx, out, owners)
		return nil, fmt.Errorf("not Ready within %s: %s", readyTimeout, strings.Join(waiting, ", "))
	}
	return owners, nil
}

// ready reports whether the object's Ready condition is True for its
// current generation, and if not why.
func ready(u *unstructured.Unstructured) (bool, string) {
	c := condition(u, "Ready")
	if c == nil {
		return false, "no Ready condition yet"
	}
	if og, ok, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); ok && og != u.GetGeneration() {
		return false, fmt.Sprintf("generation %d not observed yet", u.GetGeneration())
	}
	if c.Status != metav1.ConditionTrue {
		return false, fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
	}
	return true, ""
}

func conditionsOf(u *unstructured.Unstructured) []metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var out []metav1.Condition
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		c := metav1.Condition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err == nil {
			out = append(out, c)
		}
	}
	return out
}

func condition(u *unstructured.Unstructured, typ string) *metav1.Condition {
	for _, c := range conditionsOf(u) {
		if c.Type == typ {
			return &c
		}
	}
	return nil
}

// summary is "Ready=True (Reason)" followed by the other conditions, or the
// phase for objects without conditions (a Namespace, a Pod).
func summary(u *unstructured.Unstructured) string {
	var parts []string
	if c := condition(u, "Ready"); c != nil {
		parts = append(parts, fmt.Sprintf("Ready=%s (%s)", c.Status, c.Reason))
	}
	for _, c := range conditionsOf(u) {
		if c.Type != "Ready" {
			parts = append(parts, fmt.Sprintf("%s=%s", c.Type, c.Status))
		}
	}
	if phase, ok, _ := unstructured.NestedString(u.Object, "status", "phase"); ok && phase != "" {
		parts = append(parts, "phase="+phase)
	}
	return strings.Join(parts, " ")
}

func withSummary(u *unstructured.Unstructured) string {
	if s := summary(u); s != "" {
		return "  " + s
	}
	return ""
}

// children indexes, by owner UID, every object of the child kinds that has
// ownerReferences; and lists ApplySet members by parent.
type children struct {
	byOwner map[types.UID][]*unstructured.Unstructured
}

func (t *tree) children(ctx context.Context) (*children, error) {
	kinds := slices.Clone(commonChildKinds)
	for _, ex := range t.examples {
		kinds = append(kinds, ex.Owners...)
		kinds = append(kinds, ex.ChildKinds...)
	}
	ch := &children{byOwner: map[types.UID][]*unstructured.Unstructured{}}
	for _, gvk := range kinds {
		list, err := t.list(ctx, gvk)
		if err != nil {
			return nil, err
		}
		for _, u := range list {
			for _, ref := range u.GetOwnerReferences() {
				ch.byOwner[ref.UID] = append(ch.byOwner[ref.UID], u)
			}
		}
	}
	return ch, nil
}

// members lists the members of an ApplySet parent: the objects of the
// group-kinds its annotation lists that carry its part-of label.
func (t *tree) members(ctx context.Context, parent *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	id := parent.GetLabels()[applyset.IDLabel]
	kinds := parent.GetAnnotations()["applyset.kubernetes.io/contains-group-kinds"]
	if id == "" || kinds == "" {
		return nil, nil
	}
	var out []*unstructured.Unstructured
	for _, gks := range strings.Split(kinds, ",") {
		gk := schema.ParseGroupKind(gks)
		mapping, err := t.dc.Client.RESTMapper().RESTMapping(gk)
		if err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return nil, err
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(mapping.GroupVersionKind.GroupVersion().WithKind(gk.Kind + "List"))
		if err := t.dc.Client.List(ctx, list, client.MatchingLabels{applyset.PartOfLabel: id}); err != nil {
			return nil, fmt.Errorf("listing the %s members of %s: %w", gk.Kind, describe(parent), err)
		}
		for i := range list.Items {
			list.Items[i].SetGroupVersionKind(mapping.GroupVersionKind)
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// print prints every owner and its descendants and returns every object it
// printed, by key.
func (t *tree) print(ctx context.Context, out io.Writer, owners []*unstructured.Unstructured) (map[key]*unstructured.Unstructured, error) {
	ch, err := t.children(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[key]*unstructured.Unstructured{}
	extra := map[string]func(context.Context, *demoContext, *unstructured.Unstructured) ([]string, error){}
	for _, ex := range t.examples {
		for _, gvk := range ex.Owners {
			if ex.Extra != nil {
				extra[gvk.Kind+"."+gvk.Group] = ex.Extra
			}
		}
	}
	type child struct {
		obj    *unstructured.Unstructured
		member bool // an ApplySet member rather than an owned object
	}
	var walk func(u *unstructured.Unstructured, indent string, depth int) error
	walk = func(u *unstructured.Unstructured, indent string, depth int) error {
		var kids []child
		for _, k := range ch.byOwner[u.GetUID()] {
			kids = append(kids, child{obj: k})
		}
		members, err := t.members(ctx, u)
		if err != nil {
			return err
		}
		for _, m := range members {
			kids = append(kids, child{obj: m, member: true})
		}
		sort.SliceStable(kids, func(i, j int) bool { return describe(kids[i].obj) < describe(kids[j].obj) })
		var lines []string
		if f := extra[u.GroupVersionKind().Kind+"."+u.GroupVersionKind().Group]; f != nil {
			if lines, err = f(ctx, t.dc, u); err != nil {
				return err
			}
		}
		for _, l := range lines {
			fmt.Fprintf(out, "%s│  %s\n", indent, l)
		}
		for i, k := range kids {
			branch, next := "├─ ", "│  "
			if i == len(kids)-1 {
				branch, next = "└─ ", "   "
			}
			rel := ""
			if k.member {
				rel = " [applyset member]"
			}
			fmt.Fprintf(out, "%s%s%s%s%s\n", indent, branch, describe(k.obj), rel, withSummary(k.obj))
			seen[objectKey(k.obj)] = k.obj
			if depth < 3 {
				if err := walk(k.obj, indent+next, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, o := range owners {
		seen[objectKey(o)] = o
		fmt.Fprintf(out, "%s%s\n", describe(o), withSummary(o))
		if err := walk(o, "", 1); err != nil {
			return nil, err
		}
		fmt.Fprintln(out)
	}
	return seen, nil
}

// waitGone waits until every object in objs and every external resource
// registered with CheckGone is gone, printing each as it goes.
func (t *tree) waitGone(ctx context.Context, out io.Writer, objs map[key]*unstructured.Unstructured) error {
	start := time.Now()
	pending := map[string]func(context.Context) (bool, error){}
	for _, u := range objs {
		pending[describe(u)] = func(ctx context.Context) (bool, error) {
			probe := &unstructured.Unstructured{}
			probe.SetGroupVersionKind(u.GroupVersionKind())
			err := t.dc.Client.Get(ctx, client.ObjectKeyFromObject(u), probe)
			if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
				return true, nil
			}
			return false, err
		}
	}
	for _, g := range t.dc.gone {
		pending[g.what] = g.gone
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, goneTimeout, true, func(ctx context.Context) (bool, error) {
		var gone []string
		for what, check := range pending {
			ok, err := check(ctx)
			if err != nil {
				return false, fmt.Errorf("%s: %w", what, err)
			}
			if ok {
				gone = append(gone, what)
			}
		}
		sort.Strings(gone)
		for _, what := range gone {
			delete(pending, what)
			fmt.Fprintf(out, "  gone after %-7s %s\n", since(start).String()+":", what)
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		var left []string
		for what := range pending {
			left = append(left, what)
		}
		sort.Strings(left)
		return fmt.Errorf("not deleted within %s: %s", goneTimeout, strings.Join(left, ", "))
	}
	return nil
}

// finishPods stands in for the kubelet that the control plane lacks: every
// half second it marks each Pending Pod Succeeded (its containers exited 0),
// so that the examples that run Pods (the At) see them finish. It stops
// with ctx.
func finishPods(ctx context.Context, c client.Client) error {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods); err != nil {
			continue // the next tick tries again
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Status.Phase != "" && p.Status.Phase != corev1.PodPending || p.DeletionTimestamp != nil {
				continue
			}
			now := metav1.Now()
			p.Status.Phase = corev1.PodSucceeded
			p.Status.StartTime = &now
			p.Status.ContainerStatuses = nil
			for _, ctr := range p.Spec.Containers {
				p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
					Name: ctr.Name, Image: ctr.Image,
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}},
				})
			}
			_ = c.Status().Update(ctx, p) // a conflict: the next tick tries again
		}
	}
}

// adminKubeconfig writes a kubeconfig of an admin user of the control plane
// (for kubectl and kubectl-conditions) and returns its path and a function
// that removes it.
func adminKubeconfig(env *testenv.Environment) (string, func(), error) {
	user, err := env.Envtest.AddUser(envtest.User{Name: "demo-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", nil, fmt.Errorf("adding a kubectl user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return "", nil, fmt.Errorf("writing a kubeconfig: %w", err)
	}
	f, err := os.CreateTemp("", "steady-demo-*.kubeconfig")
	if err != nil {
		return "", nil, err
	}
	remove := func() { _ = os.Remove(f.Name()) }
	if _, err := f.Write(kubeconfig); err != nil {
		remove()
		return "", nil, errors.Join(err, f.Close())
	}
	if err := f.Close(); err != nil {
		remove()
		return "", nil, err
	}
	return f.Name(), remove, nil
}

// showConditions runs the kubectl-conditions plugin (cmd/kubectl-conditions,
// its check package called in-process) with each list of arguments on the
// cluster. An unhealthy object (exit status 1) is shown, not an error of the
// demo; the plugin failing to scan (exit status 2) is.
func showConditions(ctx context.Context, out io.Writer, kubeconfig string, runs ...[]string) error {
	for _, args := range runs {
		fmt.Fprintf(out, "$ kubectl conditions %s\n", strings.Join(args, " "))
		code := check.Run(ctx, append([]string{"--kubeconfig", kubeconfig}, args...), out, out)
		fmt.Fprintf(out, "(exit status %d)\n\n", code)
		if code == check.ExitError {
			return fmt.Errorf("kubectl conditions %s: exit status %d", strings.Join(args, " "), code)
		}
	}
	return nil
}

// applyBroken applies every example's Broken object and waits until its
// Ready condition says it is not Ready; it returns the objects, for the
// deletion.
func (t *tree) applyBroken(ctx context.Context, out io.Writer) ([]*unstructured.Unstructured, error) {
	var broken []*unstructured.Unstructured
	for _, ex := range t.examples {
		if ex.Broken == "" {
			continue
		}
		objs, err := applyset.ReadFS(fstest.MapFS{"broken.yaml": {Data: []byte(ex.Broken)}}, "*")
		if err != nil {
			return nil, fmt.Errorf("%s: the broken object: %w", ex.Name, err)
		}
		for _, o := range objs {
			if err := t.dc.Client.Create(ctx, o.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
				return nil, fmt.Errorf("applying %s: %w", describe(o), err)
			}
			fmt.Fprintf(out, "Applied %s, which cannot become Ready\n", describe(o))
			broken = append(broken, o)
		}
	}
	for _, o := range broken {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, readyTimeout, true, func(ctx context.Context) (bool, error) {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(o.GroupVersionKind())
			if err := t.dc.Client.Get(ctx, client.ObjectKeyFromObject(o), u); err != nil {
				return false, err
			}
			c := condition(u, "Ready")
			return c != nil && c.Status != metav1.ConditionTrue, nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s did not report itself not Ready: %w", describe(o), err)
		}
	}
	if len(broken) > 0 {
		fmt.Fprintln(out)
	}
	return broken, nil
}

// keepRunning says how to use the kubeconfig and waits for ctx to end
// (Ctrl-C).
func keepRunning(ctx context.Context, out io.Writer, kubeconfig string) error {
	fmt.Fprintf(out, "The control plane keeps running (DEMO_KEEP=1). In another shell:\n\n    export KUBECONFIG=%s\n    kubectl get bundles -A\n    kubectl conditions -A   # the plugin, once installed (see cmd/kubectl-conditions)\n\nPress Ctrl-C to stop it.\n", kubeconfig)
	<-ctx.Done()
	fmt.Fprintln(out, "\nStopping.")
	return nil
}
