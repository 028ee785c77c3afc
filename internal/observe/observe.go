// Package observe makes the API requests of steady's helpers visible: every
// request a helper makes through [Client] or [Reader] is counted in
// controller-runtime's metrics registry by helper and verb, and every write
// is logged at V(1) on the logger in the request's context, naming the
// object as "Kind namespace/name" and what the write changed.
package observe

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/steadyk8s/steady/internal/object"
)

// Requests counts the requests of steady's helpers by helper (the package:
// reconcile, finalizer, ownership, ...), verb (get, list, create, update,
// patch, apply, delete, deleteallof), subresource ("status", or empty) and
// dry_run ("true" or "false"), each a label of its own as in client-go's
// and controller-runtime's metrics.
var Requests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "steady_requests_total",
	Help: "API requests made by steady's helpers, by helper, verb, subresource and dry run.",
}, []string{"helper", "verb", "subresource", "dry_run"})

// helperCounts are one helper's counters of Requests, by verb,
// subresource ("" or "status") and dry run, each made on its helper's
// first request of the kind (no series appears before). Client and Reader
// find them once per wrapper: counting a request is then an index, not a
// hash of its labels.
type helperCounts struct {
	helper string
	c      [len(countedVerbs)][2][2]atomic.Pointer[counter]
}

// counter is one of Requests' counters, for an atomic.Pointer.
type counter struct{ prometheus.Counter }

// countedVerbs are the verbs helperCounts holds counters for: every verb
// of Client's and Reader's requests.
var countedVerbs = [...]string{"get", "list", "create", "update", "patch", "apply", "delete", "deleteallof"}

// helpers holds each helper's counts (a few helpers, steady's own).
var helpers sync.Map // string -> *helperCounts

// countsOf returns helper's counts.
func countsOf(helper string) *helperCounts {
	if h, ok := helpers.Load(helper); ok {
		return h.(*helperCounts)
	}
	h, _ := helpers.LoadOrStore(helper, &helperCounts{helper: helper})
	return h.(*helperCounts)
}

// count counts one request of h's helper: verb is one of countedVerbs,
// subresource "" or "status".
func (h *helperCounts) count(verb, subresource string, dry bool) {
	v := slices.Index(countedVerbs[:], verb)
	sub := 0
	if subresource == "status" {
		sub = 1
	}
	d := 0
	if dry {
		d = 1
	}
	p := &h.c[v][sub][d]
	c := p.Load()
	if c == nil {
		// WithLabelValues gives the one counter of these labels: two
		// requests racing here count on the same.
		c = &counter{Requests.WithLabelValues(h.helper, verb, subresource, strconv.FormatBool(dry))}
		p.Store(c)
	}
	c.Inc()
}

func init() { metrics.Registry.MustRegister(Requests) }

// Client wraps c so that the requests made through it are counted and its
// writes logged under helper's name.
func Client(c client.Client, helper string) client.Client {
	if o, ok := c.(*observed); ok {
		c = o.Client
	}
	return &observed{Client: c, counts: countsOf(helper)}
}

// Reader wraps r likewise; nil stays nil.
func Reader(r client.Reader, helper string) client.Reader {
	if r == nil {
		return nil
	}
	return &observedReader{r: r, counts: countsOf(helper)}
}

type observed struct {
	client.Client
	counts *helperCounts
}

type observedReader struct {
	r      client.Reader
	counts *helperCounts
}

func (o *observedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	o.counts.count("get", "", false)
	return o.r.Get(ctx, key, obj, opts...)
}

func (o *observedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o.counts.count("list", "", false)
	return o.r.List(ctx, list, opts...)
}

func (o *observed) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	o.counts.count("get", "", false)
	return o.Client.Get(ctx, key, obj, opts...)
}

func (o *observed) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o.counts.count("list", "", false)
	return o.Client.List(ctx, list, opts...)
}

func (o *observed) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	dry := len(opts) > 0 && dryRun((&client.CreateOptions{}).ApplyOptions(opts).DryRun)
	err := o.Client.Create(ctx, obj, opts...)
	o.done(writeLog(ctx), "", "create", dry, obj, func() []string { return []string{"created"} }, err)
	return err
}

func (o *observed) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	dry := len(opts) > 0 && dryRun((&client.UpdateOptions{}).ApplyOptions(opts).DryRun)
	err := o.Client.Update(ctx, obj, opts...)
	o.done(writeLog(ctx), "", "update", dry, obj, func() []string { return []string{"metadata", "spec"} }, err)
	return err
}

func (o *observed) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	dry := len(opts) > 0 && dryRun((&client.PatchOptions{}).ApplyOptions(opts).DryRun)
	log := writeLog(ctx)
	var changed []string
	if log.Enabled() && !dry {
		changed = patchedFields(obj, patch) // before the call: obj becomes the answer
	}
	err := o.Client.Patch(ctx, obj, patch, opts...)
	o.done(log, "", "patch", dry, obj, func() []string { return changed }, err)
	return err
}

func (o *observed) Apply(ctx context.Context, cfg runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	dry := len(opts) > 0 && dryRun((&client.ApplyOptions{}).ApplyOptions(opts).DryRun)
	err := o.Client.Apply(ctx, cfg, opts...)
	o.counts.count("apply", "", dry)
	if log := writeLog(ctx); log.Enabled() && !dry {
		logWrite(log, "apply", err, "helper", o.counts.helper, "changed", topLevel(cfg))
	}
	return err
}

func (o *observed) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	dry := len(opts) > 0 && dryRun((&client.DeleteOptions{}).ApplyOptions(opts).DryRun)
	err := o.Client.Delete(ctx, obj, opts...)
	o.done(writeLog(ctx), "", "delete", dry, obj, func() []string { return []string{"deleted"} }, err)
	return err
}

func (o *observed) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	dry := len(opts) > 0 && dryRun((&client.DeleteAllOfOptions{}).ApplyOptions(opts).DryRun)
	err := o.Client.DeleteAllOf(ctx, obj, opts...)
	o.done(writeLog(ctx), "", "deleteallof", dry, obj, func() []string { return []string{"deleted"} }, err)
	return err
}

func (o *observed) Status() client.SubResourceWriter {
	return &observedStatus{o: o, w: o.Client.Status()}
}

type observedStatus struct {
	o *observed
	w client.SubResourceWriter
}

func (s *observedStatus) Create(ctx context.Context, obj client.Object, sub client.Object, opts ...client.SubResourceCreateOption) error {
	err := s.w.Create(ctx, obj, sub, opts...)
	s.o.done(writeLog(ctx), "status", "create", false, obj, func() []string { return []string{"status"} }, err)
	return err
}

func (s *observedStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	dry := len(opts) > 0 && dryRun((&client.SubResourceUpdateOptions{}).ApplyOptions(opts).DryRun)
	err := s.w.Update(ctx, obj, opts...)
	s.o.done(writeLog(ctx), "status", "update", dry, obj, func() []string { return []string{"status"} }, err)
	return err
}

func (s *observedStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	dry := len(opts) > 0 && dryRun((&client.SubResourcePatchOptions{}).ApplyOptions(opts).DryRun)
	log := writeLog(ctx)
	var changed []string
	if log.Enabled() && !dry {
		changed = patchedFields(obj, patch) // before the call: obj becomes the answer
	}
	err := s.w.Patch(ctx, obj, patch, opts...)
	s.o.done(log, "status", "patch", dry, obj, func() []string { return changed }, err)
	return err
}

func (s *observedStatus) Apply(ctx context.Context, cfg runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	err := s.w.Apply(ctx, cfg, opts...)
	s.o.counts.count("apply", "status", false)
	if log := writeLog(ctx); log.Enabled() {
		logWrite(log, "apply", err, "helper", s.o.counts.helper, "changed", []string{"status"})
	}
	return err
}

// done counts a write and logs it on log (the write's [writeLog]); dry
// runs are counted, not logged. The object goes under controller-runtime's
// keys: its kind, with its namespace and name (klog.KObj), as a
// reconciler's logger names the object reconciled.
func (o *observed) done(log logr.Logger, sub, verb string, dry bool, obj client.Object, changed func() []string, err error) {
	o.counts.count(verb, sub, dry)
	if dry {
		return
	}
	if log.Enabled() {
		msg := verb
		if sub != "" {
			msg = sub + " " + verb
		}
		logWrite(log, msg, err, "helper", o.counts.helper, object.Kind(obj, o.Scheme()), klog.KObj(obj), "changed", changed())
	}
}

// logWrite logs a write: done through log.Info, failed (err) through
// log.Error (both already known to be enabled at V(1)).
func logWrite(log logr.Logger, what string, err error, kv ...any) {
	if err != nil {
		log.Error(err, "steady: "+what+" failed", kv...)
		return
	}
	log.Info("steady: "+what, kv...)
}

// writeLog is the V(1) logger of ctx, where writes are logged: the logger
// in ctx, else (also for a nil ctx) controller-runtime's root logger, as
// logf.FromContext gives them, without logf.FromContext's WithValues,
// which copies the logger on every call. A write asks once.
func writeLog(ctx context.Context) logr.Logger {
	l := logf.Log
	if ctx != nil {
		if cl, err := logr.FromContext(ctx); err == nil {
			l = cl
		}
	}
	return l.V(1)
}

// dryRun reports whether a write's DryRun option asks for a dry run. The
// writes check len(opts) > 0 before building their options struct, which
// escapes to the options' methods: a write without options (the common
// one) allocates none.
func dryRun(d []string) bool { return slices.Contains(d, "All") }

// patchedFields returns the top-level fields a patch sets (metadata, spec,
// status and so on), for the log of a write: computed before the call,
// while obj is still what the patch was made from. A metadata that carries
// only preconditions (resourceVersion, uid) does not count.
func patchedFields(obj client.Object, patch client.Patch) []string {
	data, err := patch.Data(obj)
	if err != nil {
		return nil
	}
	if patch.Type() == types.JSONPatchType {
		var out []string
		var ops []struct {
			Path string `json:"path"`
		}
		_ = json.Unmarshal(data, &ops)
		for _, op := range ops {
			if f := strings.SplitN(strings.TrimPrefix(op.Path, "/"), "/", 2)[0]; !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
		sort.Strings(out)
		return out
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(data, &m)
	var md map[string]json.RawMessage
	if json.Unmarshal(m["metadata"], &md) == nil {
		delete(md, "resourceVersion")
		delete(md, "uid")
		if len(md) == 0 {
			delete(m, "metadata")
		}
	}
	return keys(m)
}

func topLevel(cfg runtime.ApplyConfiguration) []string {
	data, err := json.Marshal(cfg)
	if err != nil {
		return nil
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(data, &m)
	delete(m, "apiVersion")
	delete(m, "kind")
	return keys(m)
}

func keys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
