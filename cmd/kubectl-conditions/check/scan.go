package check

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Scanner lists objects of the API server's resource types and evaluates
// their health with [Evaluate].
type Scanner struct {
	// Config reaches the API server (required). Its QPS and Burst, when zero, become
	// 50 and 100 (client-go's 5 and 10 would throttle a scan of every type).
	Config *rest.Config
	// Workers is how many resource types are listed at once; 0 means 4.
	Workers int
	// Progress, when set, is called after each resource type is listed
	// (done of total, by name such as "deployments.apps"), one call at a
	// time.
	Progress func(done, total int, resource string)
}

// Query says what to scan.
type Query struct {
	// Kinds names resource types by kind, resource name, singular or short
	// name, optionally qualified by group ("deployments.apps",
	// "Tenant.tenancy.example.com"), case-insensitively; empty means every
	// served type that can be listed, found by discovery at its preferred
	// version, except events.
	Kinds []string
	// Namespace limits namespaced types to one namespace; empty means all
	// namespaces.
	Namespace string
	// ClusterScoped includes the cluster-scoped types when Kinds is empty
	// (types that Kinds names are scanned whatever their scope).
	ClusterScoped bool
	// Selector is a label selector (kubectl's -l).
	Selector string
	// IncludeHealthy lists healthy objects in the report too (they are
	// always counted).
	IncludeHealthy bool
}

// Report is the result of a scan, as printed by -o json and -o yaml.
type Report struct {
	// Objects are the unhealthy objects (and the healthy ones with
	// Query.IncludeHealthy), by kind, namespace and name.
	Objects []Object `json:"objects"`
	// Unhealthy counts the unhealthy objects.
	Unhealthy int `json:"unhealthy"`
	// Healthy counts the healthy objects.
	Healthy int `json:"healthy"`
	// ResourceTypes counts the resource types that were listed.
	ResourceTypes int `json:"resourceTypes"`
	// Warnings are the resource types and API groups that could not be
	// read: forbidden to this user, or an aggregated API that is not
	// available.
	Warnings []string `json:"warnings,omitempty"`
}

// Object is one object of the report.
type Object struct {
	// APIVersion and Kind are the object's, as listed (the preferred
	// version of its group).
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Resource is the resource type, as kubectl names it:
	// "deployments.apps", "pods".
	Resource string `json:"resource"`
	// Namespace is empty for a cluster-scoped object.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Healthy is true when no rule found a problem (see [Evaluate]).
	Healthy bool `json:"healthy"`
	// Findings say why the object is unhealthy, one per failing condition
	// or rule; for a healthy object the condition that says so.
	Findings []Finding `json:"findings"`
}

// KindNotFoundError is returned when an entry of Query.Kinds matches no
// served resource type that can be listed.
type KindNotFoundError struct {
	Kind string
}

// Error says which entry matched nothing.
func (e *KindNotFoundError) Error() string {
	return fmt.Sprintf("no served resource type that can be listed matches %q", e.Kind)
}

// ListError is listing one resource type failing.
type ListError struct {
	// Resource names the type, as in [Object.Resource].
	Resource string
	// Namespace is the namespace listed; empty for all namespaces or a
	// cluster-scoped type.
	Namespace string
	// Err is the API server's error.
	Err error
}

// Error names the type (and namespace) and the API server's error.
func (e *ListError) Error() string {
	if e.Namespace != "" {
		return fmt.Sprintf("listing %s in namespace %s: %v", e.Resource, e.Namespace, e.Err)
	}
	return fmt.Sprintf("listing %s: %v", e.Resource, e.Err)
}

// Unwrap returns the API server's error, for apierrors.IsForbidden and the
// like.
func (e *ListError) Unwrap() error { return e.Err }

// NothingListedError is returned when no resource type at all could be
// listed: the report would say nothing.
type NothingListedError struct {
	// Types counts the types that were tried.
	Types int
}

// Error says how many types were tried.
func (e *NothingListedError) Error() string {
	return fmt.Sprintf("none of the %d resource types could be listed", e.Types)
}

// resourceType is one served, listable resource type.
type resourceType struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	singular   string
	short      []string
}

// name is kubectl's name of the type: "deployments.apps", "pods".
func (t resourceType) name() string {
	if t.gvr.Group == "" {
		return t.gvr.Resource
	}
	return t.gvr.Resource + "." + t.gvr.Group
}

func (t resourceType) matches(entry string) bool {
	entry = strings.ToLower(entry)
	names := append([]string{t.gvr.Resource, t.singular, strings.ToLower(t.kind)}, t.short...)
	for _, n := range names {
		if n == "" {
			continue
		}
		if entry == n || t.gvr.Group != "" && entry == n+"."+t.gvr.Group {
			return true
		}
	}
	return false
}

// Scan discovers the resource types, lists those the query selects and
// evaluates every object. A type that may not be listed (403), an API group
// or type that is not available (503, as an aggregated API whose server is
// down), or a type that went away meanwhile (404) is a warning in the
// report. Any other failure is returned, joined, with the report of what
// could be listed: an unknown kind ([*KindNotFoundError]), a failed
// discovery, a type that failed otherwise ([*ListError]), nothing listable
// at all ([*NothingListedError]).
func (s *Scanner) Scan(ctx context.Context, q Query) (*Report, error) {
	cfg := rest.CopyConfig(s.Config)
	if cfg.QPS == 0 && cfg.Burst == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	cfg.WarningHandler = rest.NoWarnings{}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	report := &Report{Objects: []Object{}}
	all, warnings, err := discover(disc)
	if err != nil {
		return nil, err
	}
	report.Warnings = warnings
	types, err := selectTypes(all, q)
	if err != nil {
		return report, err
	}

	workers := cmp.Or(s.Workers, 4)
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		errs     []error
		done     int
		next     = make(chan resourceType)
		listed   int
		failures int
	)
	for range min(workers, len(types)) {
		wg.Go(func() {
			for t := range next {
				ns := ""
				if t.namespaced {
					ns = q.Namespace
				}
				objs, err := listType(ctx, dyn, t, ns, q.Selector)
				mu.Lock()
				done++
				switch {
				case err == nil:
					listed++
					for _, o := range objs {
						if o.Healthy {
							report.Healthy++
							if !q.IncludeHealthy {
								continue
							}
						} else {
							report.Unhealthy++
						}
						report.Objects = append(report.Objects, o)
					}
				case isWarning(err):
					failures++
					report.Warnings = append(report.Warnings, err.Error())
				default:
					failures++
					errs = append(errs, err)
				}
				if s.Progress != nil {
					s.Progress(done, len(types), t.name())
				}
				mu.Unlock()
			}
		})
	}
feed:
	for _, t := range types {
		select {
		case next <- t:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return report, err
	}
	report.ResourceTypes = listed
	slices.SortFunc(report.Objects, func(a, b Object) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Resource, b.Resource),
			cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	slices.Sort(report.Warnings)
	if listed == 0 && failures > 0 {
		errs = append(errs, &NothingListedError{Types: failures})
	}
	return report, errors.Join(errs...)
}

// isWarning tells a failure to list a type that the report can live with
// (forbidden, unavailable, gone) from one that makes it unreliable.
func isWarning(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err)
}

// discover lists the served resource types at their preferred versions that
// can be listed, without subresources. Groups whose discovery failed (an
// aggregated API that is down) become warnings.
func discover(disc discovery.DiscoveryInterface) ([]resourceType, []string, error) {
	lists, err := discovery.ServerPreferredResources(disc)
	var warnings []string
	if err != nil {
		failed, ok := discovery.GroupDiscoveryFailedErrorGroups(err)
		if !ok {
			return nil, nil, fmt.Errorf("discovering the API server's resource types: %w", err)
		}
		for gv, gerr := range failed {
			warnings = append(warnings, fmt.Sprintf("discovering %s: %v", gv, gerr))
		}
	}
	var types []resourceType
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			types = append(types, resourceType{
				gvr:        gv.WithResource(r.Name),
				kind:       r.Kind,
				namespaced: r.Namespaced,
				singular:   strings.ToLower(r.SingularName),
				short:      r.ShortNames,
			})
		}
	}
	slices.SortFunc(types, func(a, b resourceType) int { return cmp.Compare(a.name(), b.name()) })
	return types, warnings, nil
}

// selectTypes picks the types of the query: those Kinds names, else every
// type but events (records rather than objects with a health; the largest
// lists in most clusters), the cluster-scoped ones only with ClusterScoped.
func selectTypes(all []resourceType, q Query) ([]resourceType, error) {
	if len(q.Kinds) == 0 {
		var out []resourceType
		for _, t := range all {
			if t.gvr.Resource == "events" && (t.gvr.Group == "" || t.gvr.Group == "events.k8s.io") {
				continue
			}
			if t.namespaced || q.ClusterScoped {
				out = append(out, t)
			}
		}
		return out, nil
	}
	var out []resourceType
	var errs []error
	for _, entry := range q.Kinds {
		found := false
		for _, t := range all {
			if t.matches(entry) {
				found = true
				if !slices.ContainsFunc(out, func(o resourceType) bool { return o.gvr == t.gvr }) {
					out = append(out, t)
				}
			}
		}
		if !found {
			errs = append(errs, &KindNotFoundError{Kind: entry})
		}
	}
	return out, errors.Join(errs...)
}

// listType lists one type, page by page, and evaluates every object.
func listType(ctx context.Context, dyn dynamic.Interface, t resourceType, namespace, selector string) ([]Object, error) {
	var ri dynamic.ResourceInterface = dyn.Resource(t.gvr)
	if namespace != "" {
		ri = dyn.Resource(t.gvr).Namespace(namespace)
	}
	var out []Object
	opts := metav1.ListOptions{LabelSelector: selector, Limit: 500}
	for {
		list, err := ri.List(ctx, opts)
		if err != nil {
			return nil, &ListError{Resource: t.name(), Namespace: namespace, Err: err}
		}
		for i := range list.Items {
			u := &list.Items[i]
			if u.GetKind() == "" {
				u.SetGroupVersionKind(t.gvr.GroupVersion().WithKind(t.kind))
			}
			h := Evaluate(u)
			out = append(out, Object{
				APIVersion: u.GetAPIVersion(),
				Kind:       u.GetKind(),
				Resource:   t.name(),
				Namespace:  u.GetNamespace(),
				Name:       u.GetName(),
				Healthy:    h.Healthy,
				Findings:   h.Findings,
			})
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}
