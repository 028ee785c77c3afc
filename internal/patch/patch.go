package patch

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/object"
	"github.com/steadyk8s/steady/internal/scope"
)

// Options configures one [Writer.Patch].
type Options struct {
	// OptimisticLock locks every write on the snapshot's resourceVersion
	// and returns a conflict instead of rebasing.
	OptimisticLock bool
	// ObservedGeneration sets status.observedGeneration to the object's
	// generation.
	ObservedGeneration bool
	// GuardGeneration refuses, as ObservedGeneration does, a status
	// computed from a generation older than the live
	// status.observedGeneration (Result.Stale), without setting it.
	GuardGeneration bool
	// OwnedConditions are condition types whose value this change imposes
	// on a rebase even where it did not change them.
	OwnedConditions []string
	// ConditionLists are paths of further condition lists (besides
	// status.conditions), rebased by type like it.
	ConditionLists [][]string
	// CheckOwnWrites refuses a snapshot older than this process's own last
	// write of the object (see [scope.State.OwnWriteAhead]): nothing is
	// written and Result.Stale says why.
	CheckOwnWrites bool
}

// Writer writes through Client and re-reads through Reader (Client when
// nil).
type Writer struct {
	Client client.Client
	Reader client.Reader
	// State is the State of the client's cluster, where this process's
	// writes are recorded and CheckOwnWrites looks (nil: none), and Key
	// names the object written there.
	State *scope.State
	Key   scope.Key
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
	// Stale, when set, says why a part was not written: it was computed
	// from a state older than the live one (see the package doc). The
	// caller should read the object again and reconcile anew.
	Stale string
	// StatusBase is the latest object, as a map, that the status write was
	// rebased on (the snapshot, or a later read), and StatusAnswer the API
	// server's answer to it (both set when status was written).
	// StatusAnswer may share its maps and slices with the object Patch
	// wrote the last answer into: read it before that object changes.
	StatusBase   map[string]any
	StatusAnswer client.Object
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
	if o.CheckOwnWrites {
		if rv, ahead := w.State.OwnWriteAhead(w.Key, before); ahead {
			return Result{Stale: fmt.Sprintf("it was read at resourceVersion %s, older than this process's own write at %s (a lagging cache)",
				before.GetResourceVersion(), rv)}, nil
		}
	}
	if unchanged(before, obj, o) {
		return Result{}, nil // no JSON work for the common reconcile
	}
	// The snapshot as a map is the latest state too: plan and the writes
	// only read it.
	bm, err := object.ToMapWithoutManagedFields(before)
	if err != nil {
		return Result{}, err
	}
	st := &state{m: bm, rv: before.GetResourceVersion(), uid: string(before.GetUID())}
	if _, untyped := before.(*unstructured.Unstructured); !untyped {
		st.typed, st.managed, st.typ = true, before.GetManagedFields(), reflect.TypeOf(before)
	}
	parts, err := plan(bm, obj, o)
	if err != nil {
		return Result{}, err
	}
	var res Result
	var answer client.Object
	for _, p := range parts {
		if p.merged {
			continue
		}
		ans, gone, err := w.write(ctx, obj, st, p, o, &res)
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
		// The answer is this call's own: obj takes it without a copy
		// (Result.StatusAnswer, which may be it, is only read).
		object.Move(obj, answer)
	}
	return res, nil
}

// state is the latest known state of the object.
type state struct {
	// m is the latest object as a map; nil until asked for while obj, the
	// API server's last answer, is converted only when a later write (or a
	// caller) needs it.
	m     map[string]any
	obj   client.Object
	rv    string
	uid   string
	stale int // stale re-reads so far
	// typed: the object is read through a Go type, which shows only the
	// fields it holds; managed are then the latest object's managedFields,
	// which name every field it has (see mapDrop.removal).
	typed   bool
	managed []metav1.ManagedFieldsEntry
	typ     reflect.Type // the object's Go type, where typed
}

// latest returns the latest object as a map.
func (st *state) latest() (map[string]any, error) {
	if st.m == nil && st.obj != nil {
		m, err := object.ToMapWithoutManagedFields(st.obj)
		if err != nil {
			return nil, err
		}
		st.m, st.obj = m, nil
	}
	return st.m, nil
}

// set makes obj, an answer or a fresh read, the latest state.
func (st *state) set(obj client.Object) {
	st.m, st.obj, st.rv = nil, obj, obj.GetResourceVersion()
	if st.typed {
		st.managed = obj.GetManagedFields()
	}
}

// fieldSets are the field sets of st.managed, decoded (nil where the object
// is unstructured, whose maps hold every field, or carries none).
func (st *state) fieldSets() []map[string]any {
	var out []map[string]any
	for _, f := range object.FieldSets(&metav1.ObjectMeta{ManagedFields: st.managed}, nil) {
		out = append(out, f.Set)
	}
	return out
}

// unchanged reports, without converting to JSON, that obj is exactly the
// snapshot (deep equality of the Go values) and that nothing the options
// add would change it: with ObservedGeneration, status.observedGeneration
// already equals the generation. false means "maybe changed": the JSON
// difference decides.
func unchanged(before, obj client.Object, o Options) bool {
	if !object.Equal(before, obj) {
		return false
	}
	if !o.ObservedGeneration {
		return true
	}
	og, ok := observedGeneration(obj)
	return ok && og == obj.GetGeneration()
}

// observedGeneration reads status.observedGeneration of an unstructured
// object, or of a Go type whose status has an int64 field of that JSON
// name; ok is false where it cannot tell.
func observedGeneration(obj client.Object) (int64, bool) {
	if u, isU := obj.(*unstructured.Unstructured); isU {
		og, found, err := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		return og, found && err == nil
	}
	f, ok := object.StatusValue(obj, "observedGeneration", false)
	if !ok || f.Kind() != reflect.Int64 {
		return 0, false
	}
	return f.Int(), true
}
