// Package patch is the one write engine behind reconcile.Patcher and
// finalizer.Handler: it writes the difference between a snapshot of an
// object and the object as changed, as JSON merge patches (status to the
// status subresource, the rest to the object), and keeps other writers' data.
//
// What it guarantees, once, for both callers:
//
//   - The difference is taken on the JSON of the two objects, so any shape
//     of object works (typed or unstructured) and every removal is written
//     as a null; empty objects that exist only because a parent struct is
//     not omitted ({"topology":{}} where there was no topology) are pruned.
//   - Lists that a merge patch replaces whole and that other writers also
//     change are rebased on the latest state of the object before each
//     write: metadata.finalizers (by value), metadata.ownerReferences (by
//     uid) and condition lists (by type, entries kept as JSON objects of any
//     shape, as far as the object's Go type reads them: a typed object
//     drops the fields its types lack). Only the entries this change
//     added, changed or removed are touched; every other entry stays as
//     the latest writer has it. Dropping the last of our labels or
//     annotations removes them key by key, not the whole map. Whenever
//     such a list is sent the write is locked on the resourceVersion the
//     list was rebased on; after a status write, the second write rebases on
//     the status write's answer.
//   - Every write carries the snapshot's metadata.uid as a precondition
//     (its refusal, or a re-read that finds a newer object under the name,
//     ends the write as gone): a recreated object is never written. The
//     status subresource ignores a uid in the patch (its strategy takes
//     metadata from the stored object), so status writes are always locked
//     on the resourceVersion instead, and rebased on a conflict like the
//     lists.
//   - Re-reads after a conflict go to Reader (the API server when the caller
//     gave an API reader). A re-read that returns the resourceVersion that
//     just conflicted, or an older one, is stale (a lagging cache): it is
//     repeated with backoff until the reader catches up. Through a cache, a
//     NotFound or an older object under the name is never taken for gone.
package patch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
)

// MaxAttempts bounds the writes of one part (status, or the rest) when
// other writers keep changing the object.
const MaxAttempts = 11

// maxStaleReads bounds, per Patch, the re-reads through a client that may
// be a lagging cache which return the state that just conflicted; with the
// backoff below they span about 2.3 seconds.
const maxStaleReads = 8

// backoff is the pause before the i-th repeated read (i from 0).
func backoff(i int) time.Duration {
	d := 10 * time.Millisecond << min(i, 7)
	return min(d, time.Second)
}

// Options configures one [Writer.Patch].
type Options struct {
	// OptimisticLock locks every write on the snapshot's resourceVersion
	// and returns a conflict instead of rebasing.
	OptimisticLock bool
	// ObservedGeneration sets status.observedGeneration to the object's
	// generation.
	ObservedGeneration bool
	// OwnedConditions are condition types whose value this change imposes
	// on a rebase even where it did not change them.
	OwnedConditions []string
	// ConditionLists are paths of further condition lists (besides
	// status.conditions), rebased by type like it.
	ConditionLists [][]string
}

// Writer writes through Client and re-reads through Reader (Client when
// nil).
type Writer struct {
	Client client.Client
	Reader client.Reader
	// Sleep pauses between stale re-reads; nil: a timer that respects ctx.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Result says what [Writer.Patch] did.
type Result struct {
	// Gone: the object is gone (NotFound, or another object under its name
	// now); nothing more was written.
	Gone bool
	// Wrote lists the parts written ("status", "metadata and spec", or
	// "status, metadata and spec" in one write to an object without a
	// status subresource).
	Wrote []string
}

// StepError is the failure of one write; Wrote lists what was written
// before it.
type StepError struct {
	Step  string
	Wrote []string
	// Unsure: the failed write may itself have been applied (its error did
	// not come from the API server: a timeout, a dropped connection).
	Unsure bool
	Err    error
}

// Error implements error.
func (e *StepError) Error() string {
	return "writing " + e.Step + " (" + Written(e.Wrote, e.Unsure) + "): " + e.Err.Error()
}

// Unwrap returns the API error.
func (e *StepError) Unwrap() error { return e.Err }

// Written says what was written before a failed write, and whether that
// write may itself have been applied.
func Written(wrote []string, unsure bool) string {
	s := "nothing was written"
	if len(wrote) > 0 {
		s = strings.Join(wrote, " and ") + " was written"
	}
	if unsure {
		s += " before it; it may itself have been applied"
	}
	return s
}

// unsureError is a write's error that did not come from the API server.
type unsureError struct{ error }

func (e unsureError) Unwrap() error { return e.error }

const (
	stepStatus = "status"
	stepMain   = "metadata and spec"
)

// Patch writes the difference from before (the object as read) to obj (the
// object as changed). On success, unless gone, obj holds the API server's
// answer to the last write; when nothing was to be written, obj is left as
// it is.
func (w *Writer) Patch(ctx context.Context, before, obj client.Object, o Options) (Result, error) {
	parts, err := plan(before, obj, o)
	if err != nil {
		return Result{}, err
	}
	if len(parts) == 0 {
		return Result{}, nil
	}
	st := &state{latest: nil, rv: before.GetResourceVersion(), uid: string(before.GetUID())}
	if st.latest, err = object.ToMap(before); err != nil {
		return Result{}, err
	}
	var res Result
	var answer client.Object
	for _, p := range parts {
		if p.merged {
			continue
		}
		ans, gone, err := w.write(ctx, obj, st, p, o)
		if err != nil {
			se := &StepError{Step: p.step(), Wrote: res.Wrote, Err: err}
			var u unsureError
			if errors.As(err, &u) {
				se.Unsure, se.Err = true, u.error
			}
			return res, se
		}
		if gone {
			res.Gone = true
			return res, nil
		}
		if ans != nil {
			answer = ans
			res.Wrote = append(res.Wrote, p.step())
		}
	}
	if answer != nil {
		object.Copy(obj, answer)
	}
	return res, nil
}

// state is the latest known state of the object.
type state struct {
	latest map[string]any
	rv     string
	uid    string
	stale  int // stale re-reads so far
}

// part is one write: the status subresource, or the object.
type part struct {
	status   bool // written to the status subresource (until it is found missing)
	fallback bool // status written to the object: there is no status subresource
	// rest is the part of the object's other fields, which a status written
	// with the object takes along (merged marks it so): one write, one
	// generation bump.
	rest   *part
	merged bool
	diff   map[string]any
	lists  []*list
}

func (p *part) step() string {
	if p.fallback && p.rest != nil && p.rest.merged {
		return stepStatus + ", " + stepMain
	}
	if p.status || p.fallback {
		return stepStatus
	}
	return stepMain
}

// metadata fields the API server owns, or that are rebased as lists.
var skippedMetadata = []string{
	"resourceVersion", "managedFields", "generation", "creationTimestamp", "uid",
	"deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "finalizers", "ownerReferences",
}

func plan(before, obj client.Object, o Options) ([]*part, error) {
	bm, err := object.ToMap(before)
	if err != nil {
		return nil, err
	}
	am, err := object.ToMap(obj)
	if err != nil {
		return nil, err
	}
	if o.ObservedGeneration {
		if err := unstructured.SetNestedField(am, obj.GetGeneration(), "status", "observedGeneration"); err != nil {
			return nil, fmt.Errorf("setting status.observedGeneration: %w", err)
		}
	}
	owned := map[string]bool{}
	for _, t := range o.OwnedConditions {
		owned[t] = true
	}
	all := []*list{
		{path: []string{"metadata", "finalizers"}, key: stringKey},
		{path: []string{"metadata", "ownerReferences"}, key: fieldKey("uid")},
	}
	condPaths := append([][]string{{"status", "conditions"}}, o.ConditionLists...)
	for _, p := range condPaths {
		if len(p) == 0 {
			continue
		}
		all = append(all, &list{path: p, key: fieldKey("type"), owned: owned})
	}
	lists := all[:0]
	for _, l := range all {
		b, a := nested(bm, l.path), nested(am, l.path)
		var bok, aok bool
		l.before, bok = b.([]any)
		l.after, aok = a.([]any)
		if (b != nil && !bok) || (a != nil && !aok) {
			continue // not a list there: an ordinary field of the diff
		}
		removeNested(bm, l.path)
		removeNested(am, l.path)
		lists = append(lists, l)
	}
	all = lists

	// status
	sb, _ := bm["status"].(map[string]any)
	sa, _ := am["status"].(map[string]any)
	status := &part{status: true}
	if status.diff, err = mergeDiff(map[string]any{"status": orEmpty(sb)}, map[string]any{"status": orEmpty(sa)}); err != nil {
		return nil, err
	}
	// the rest
	strip := func(m map[string]any) map[string]any {
		delete(m, "status")
		delete(m, "apiVersion")
		delete(m, "kind")
		if md, ok := m["metadata"].(map[string]any); ok {
			for _, f := range skippedMetadata {
				delete(md, f)
			}
		}
		return m
	}
	main := &part{}
	if main.diff, err = mergeDiff(strip(bm), strip(am)); err != nil {
		return nil, err
	}
	if md, ok := main.diff["metadata"].(map[string]any); ok {
		// Dropping the last of our labels is "labels": null, which would
		// delete every label, others' too: remove ours key by key.
		for k, old := range map[string]map[string]string{"labels": before.GetLabels(), "annotations": before.GetAnnotations()} {
			if v, present := md[k]; present && v == nil && len(old) > 0 {
				keys := make(map[string]any, len(old))
				for key := range old {
					keys[key] = nil
				}
				md[k] = keys
			}
		}
	}
	for _, l := range all {
		if !l.changed() {
			continue
		}
		if l.path[0] == "status" {
			status.lists = append(status.lists, l)
		} else {
			main.lists = append(main.lists, l)
		}
	}
	var parts []*part
	if len(main.diff) > 0 || len(main.lists) > 0 {
		status.rest = main
	}
	for _, p := range []*part{status, main} {
		if len(p.diff) > 0 || len(p.lists) > 0 {
			parts = append(parts, p)
		}
	}
	return parts, nil
}

// body is the merge patch of p on latest, and whether it sends a list.
func (p *part) body(latest map[string]any, o Options) (map[string]any, bool, error) {
	body := runtime.DeepCopyJSON(p.diff)
	lists := false
	for _, l := range p.lists {
		cur, _ := nested(latest, l.path).([]any)
		out := l.rebase(cur)
		if equalList(out, cur) {
			continue
		}
		var v any
		if len(out) > 0 {
			v = out
		}
		if err := setList(body, latest, v, l.path); err != nil {
			return nil, false, err
		}
		lists = true
	}
	// After a conflict the latest object may already hold some of what
	// this reconcile changed (another writer, or our own earlier write
	// seen late, set it): such fields are no change, and a body left
	// empty is no write.
	dropApplied(body, latest)
	if p.fallback && o.ObservedGeneration {
		// Written with the object, status bumps the generation: record the
		// generation this write produces, and do not write for
		// observedGeneration alone once it is current.
		if s, ok := body["status"].(map[string]any); ok {
			delete(s, "observedGeneration")
			if len(s) == 0 {
				delete(body, "status")
			}
		}
		gen, _, _ := unstructured.NestedInt64(latest, "metadata", "generation")
		og, _, _ := unstructured.NestedInt64(latest, "status", "observedGeneration")
		bumps := false // a change outside metadata bumps the generation
		for k := range body {
			bumps = bumps || k != "metadata"
		}
		if bumps || og != gen {
			if err := setNested(body, gen+1, []string{"status", "observedGeneration"}); err != nil {
				return nil, false, err
			}
		}
	}
	return body, lists, nil
}

// write sends p, retrying on conflicts, and returns the API server's
// answer (nil when there was nothing left to send), or gone.
func (w *Writer) write(ctx context.Context, obj client.Object, st *state, p *part, o Options) (client.Object, bool, error) {
	for attempt := 1; ; attempt++ {
		body, lists, err := p.body(st.latest, o)
		if err != nil {
			return nil, false, err
		}
		if len(body) == 0 {
			return nil, false, nil
		}
		md := map[string]any{}
		if st.uid != "" {
			md["uid"] = st.uid
		}
		// The status subresource takes metadata from the stored object, so
		// a uid in its patch is never compared: only a resourceVersion lock
		// keeps a status write off an object recreated under the name.
		if lists || o.OptimisticLock || (p.status && st.uid != "") {
			md["resourceVersion"] = st.rv
		}
		if len(md) > 0 {
			if m, ok := body["metadata"].(map[string]any); ok {
				for k, v := range md {
					m[k] = v
				}
			} else {
				body["metadata"] = md
			}
		}
		data, err := json.Marshal(body)
		if err != nil {
			return nil, false, err
		}
		target := object.EmptyLike(obj)
		patch := client.RawPatch(types.MergePatchType, data)
		if p.status {
			err = w.Client.Status().Patch(ctx, target, patch)
		} else {
			err = w.Client.Patch(ctx, target, patch)
		}
		if err == nil {
			m, err := object.ToMap(target)
			if err != nil {
				return nil, false, err
			}
			st.latest, st.rv = m, target.GetResourceVersion()
			return target, false, nil
		}
		switch {
		case apierrors.IsNotFound(err) && p.status:
			// Gone, or a kind without a status subresource: then status is
			// written with the object, in one write with the rest (a
			// NotFound there is gone).
			p.status, p.fallback = false, true
			if r := p.rest; r != nil {
				for k, v := range r.diff {
					p.diff[k] = v
				}
				p.lists = append(p.lists, r.lists...)
				r.merged = true
			}
			continue
		case apierrors.IsNotFound(err):
			return nil, true, nil
		case st.uid != "" && uidRefused(err):
			// The uid precondition: the object under the name is another
			// one (the API server says so; a lagging cache may not yet).
			return nil, true, nil
		case apierrors.IsConflict(err):
			// Someone wrote meanwhile.
			if o.OptimisticLock || attempt >= MaxAttempts {
				if gone, rerr := w.reread(ctx, obj, st, false); gone && rerr == nil {
					return nil, true, nil
				}
				return nil, false, err
			}
			if gone, rerr := w.reread(ctx, obj, st, true); gone || rerr != nil {
				return nil, gone, rerr
			}
		default:
			var status apierrors.APIStatus
			if !errors.As(err, &status) {
				return nil, false, unsureError{err}
			}
			return nil, false, err
		}
	}
}

// reread reads the object again into st. NotFound or another UID is gone,
// except through a reader that may lag (the client, when no API reader was
// given): there a NotFound, or an earlier incarnation of the name (another
// UID at an older resourceVersion), may be the cache not holding our object
// yet, so it is not taken for gone; only a write's NotFound, a newer
// incarnation, or the API reader's answer is. When stale is set and the
// read returns the resourceVersion already known, or an older one: through
// an API reader, the conflict was transient and the write is retried after
// a pause; through the client (maybe a lagging cache) the read is repeated
// with backoff, within a budget per Patch; a NotFound there pauses and lets
// the retried write tell. A read older than the known state is never taken.
func (w *Writer) reread(ctx context.Context, obj client.Object, st *state, stale bool) (bool, error) {
	r := w.Reader
	lagging := r == nil
	if r == nil {
		r = w.Client
	}
	sleep := w.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	pause := func() (bool, error) {
		if !stale || st.stale >= maxStaleReads {
			return false, nil
		}
		st.stale++
		if err := sleep(ctx, backoff(st.stale-1)); err != nil {
			return false, fmt.Errorf("reading the object again: %w", err)
		}
		return true, nil
	}
	for {
		fresh := object.EmptyLike(obj)
		err := r.Get(ctx, client.ObjectKeyFromObject(obj), fresh)
		switch {
		case apierrors.IsNotFound(err):
			if !lagging {
				return true, nil
			}
			// Maybe not in the cache yet: the retried write tells.
			_, err := pause()
			return false, err
		case err != nil:
			return false, fmt.Errorf("reading the object again: %w", err)
		case st.uid != "" && string(fresh.GetUID()) != st.uid:
			if !lagging || !olderRV(fresh.GetResourceVersion(), st.rv) {
				return true, nil
			}
			// The cache still holds an earlier object of that name.
			again, err := pause()
			if again {
				continue
			}
			return false, err
		case olderRV(fresh.GetResourceVersion(), st.rv):
			// Older than what is known: never rebase on it (a change it
			// happens to show would be taken as written).
			again, err := pause()
			if again && lagging {
				continue
			}
			return false, err
		case stale && fresh.GetResourceVersion() == st.rv:
			again, err := pause()
			if err != nil {
				return false, err
			}
			if again && lagging {
				continue
			}
		}
		m, err := object.ToMap(fresh)
		if err != nil {
			return false, err
		}
		st.latest, st.rv = m, fresh.GetResourceVersion()
		return false, nil
	}
}

// uidRefused reports whether err is the API server refusing a write for
// its metadata.uid: another object has the name now.
func uidRefused(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Field == "metadata.uid" {
			return true
		}
	}
	return false
}

// olderRV reports whether resourceVersion a is older than b, when both are
// well-formed.
func olderRV(a, b string) bool {
	c, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && c < 0
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// list is a list a merge patch replaces whole, keyed per entry.
type list struct {
	path          []string
	key           func(any) string
	owned         map[string]bool
	before, after []any
}

func stringKey(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return rawKey(v)
}

func fieldKey(field string) func(any) string {
	return func(v any) string {
		if m, ok := v.(map[string]any); ok {
			if s, ok := m[field].(string); ok && s != "" {
				return s
			}
		}
		return rawKey(v)
	}
}

// rawKey keys an entry without a key by its whole content.
func rawKey(v any) string {
	b, _ := json.Marshal(v)
	return "\x00" + string(b)
}

func (l *list) changed() bool { return !equalList(l.before, l.after) }

func index(items []any, key func(any) string) map[string]any {
	m := make(map[string]any, len(items))
	for _, it := range items {
		k := key(it)
		if _, dup := m[k]; !dup {
			m[k] = it
		}
	}
	return m
}

// rebase applies the change from before to after onto current: the entries
// this change added, changed or removed (and owned ones) take after's value
// or go; all others stay as current has them, in current's order; new
// entries are appended in after's order.
func (l *list) rebase(current []any) []any {
	bi, ai := index(l.before, l.key), index(l.after, l.key)
	ours := map[string]bool{}
	for k, a := range ai {
		if b, ok := bi[k]; !ok || !reflect.DeepEqual(a, b) || l.owned[ownedKey(a)] {
			ours[k] = true
		}
	}
	for k := range bi {
		if _, ok := ai[k]; !ok {
			ours[k] = true
		}
	}
	out := []any{}
	seen := map[string]bool{}
	for _, c := range current {
		k := l.key(c)
		if seen[k] {
			continue
		}
		seen[k] = true
		if !ours[k] {
			out = append(out, runtime.DeepCopyJSONValue(c))
		} else if a, ok := ai[k]; ok {
			out = append(out, runtime.DeepCopyJSONValue(a))
		}
	}
	for _, a := range l.after {
		k := l.key(a)
		if ours[k] && !seen[k] {
			seen[k] = true
			out = append(out, runtime.DeepCopyJSONValue(a))
		}
	}
	return out
}

func ownedKey(v any) string {
	if m, ok := v.(map[string]any); ok {
		s, _ := m["type"].(string)
		return s
	}
	return ""
}

func equalList(a, b []any) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(normalize(a), normalize(b))
}

// dropApplied removes from the merge patch body every field that latest
// already holds with that value (a removal of a field latest lacks
// included), and the maps left empty by that.
func dropApplied(body, latest map[string]any) {
	for k, v := range body {
		have, ok := latest[k]
		switch v := v.(type) {
		case nil:
			if !ok || have == nil {
				delete(body, k)
			}
		case map[string]any:
			if h, isMap := have.(map[string]any); isMap {
				dropApplied(v, h)
				if len(v) == 0 {
					delete(body, k)
				}
			}
		default:
			if ok && reflect.DeepEqual(normalize(v), normalize(have)) {
				delete(body, k)
			}
		}
	}
}

// normalize makes numbers of either decoding comparable.
func normalize(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func nested(m map[string]any, path []string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

func removeNested(m map[string]any, path []string) {
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			return
		}
		m = next
	}
	delete(m, path[len(path)-1])
}

// setList sets the list at path in a merge patch body whose diff may
// remove a parent of it (a null: the change dropped the whole parent, say
// status.deprecated). Then no list is left to send, or, where another
// writer added entries meanwhile, the parent is sent as an object that
// removes every other field latest has under it, keeping the removal.
func setList(body, latest map[string]any, v any, path []string) error {
	m, cur := body, latest
	removing := false // a parent is removed: null the fields latest has below it
	for _, p := range path[:len(path)-1] {
		val, present := m[p]
		c, _ := cur[p].(map[string]any)
		next, ok := val.(map[string]any)
		switch {
		case ok:
		case val != nil:
			return fmt.Errorf("field %s is not an object", strings.Join(path, "."))
		case present && v == nil:
			return nil // the parent's removal removes the list
		default:
			removing = removing || present
			next = map[string]any{}
			if removing {
				for k := range c {
					next[k] = nil
				}
			}
			m[p] = next
		}
		m, cur = next, c
	}
	m[path[len(path)-1]] = v
	return nil
}

func setNested(m map[string]any, v any, path []string) error {
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			if m[p] != nil {
				return fmt.Errorf("field %s is not an object", strings.Join(path, "."))
			}
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
	return nil
}

// mergeDiff is the JSON merge patch from before to after, without the
// empty objects that add nothing (see prune).
func mergeDiff(before, after map[string]any) (map[string]any, error) {
	b, err := json.Marshal(before)
	if err != nil {
		return nil, err
	}
	a, err := json.Marshal(after)
	if err != nil {
		return nil, err
	}
	patch, err := jsonpatch.CreateMergePatch(b, a)
	if err != nil {
		return nil, err
	}
	var diff map[string]any
	if err := json.Unmarshal(patch, &diff); err != nil {
		return nil, err
	}
	var beforeJSON map[string]any
	if err := json.Unmarshal(b, &beforeJSON); err != nil {
		return nil, err
	}
	prune(diff, beforeJSON)
	return diff, nil
}

// prune drops from a merge patch the empty objects that change nothing: an
// empty object merged where there was an object, no value or null adds no
// field (it only appears because an omitempty field's parent struct is
// never omitted, as in {"spec":{"topology":{}}}). Nulls, which remove, stay.
func prune(patch, before map[string]any) {
	for k, v := range patch {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		b, _ := before[k].(map[string]any)
		prune(m, b)
		if len(m) == 0 {
			if _, isMap := before[k].(map[string]any); isMap || before[k] == nil {
				delete(patch, k)
			}
		}
	}
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
