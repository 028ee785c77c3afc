package ownership

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/steadyk8s/steady/internal/backoff"
	"github.com/steadyk8s/steady/internal/object"
	"github.com/steadyk8s/steady/internal/observe"
	"github.com/steadyk8s/steady/internal/scope"
)

// maxAttempts bounds the rounds (read, mutate, write) of one
// CreateOrUpdate call: a write that shows the read was stale (a create
// answered AlreadyExists, an update answered NotFound) starts one more.
const maxAttempts = 3

// staleReadBackoff are the waits between the reads of the client, when a
// create answered AlreadyExists and there is no API reader, until the
// client (a cache that has not seen the child yet) shows the child: about
// 2.5 seconds in all.
var staleReadBackoff = []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond,
	160 * time.Millisecond, 320 * time.Millisecond, 640 * time.Millisecond, 1280 * time.Millisecond}

// readMode says how [writeCall.prepare] finds the live child.
type readMode int

const (
	// readClient reads the client (a cache, usually): the first round.
	readClient readMode = iota
	// readFresh follows a create answered AlreadyExists: it reads the API
	// reader, or the client again until it shows the child.
	readFresh
	// readNone follows a write answered NotFound: the child is gone, and
	// nothing is read.
	readNone
)

// writeCall is one CreateOrUpdate call.
type writeCall struct {
	c client.Client
	// apiReader, once resolved (see rereader), is the one re-reads
	// go through, or nil.
	apiReader client.Reader
	// refusal is the API reader's Forbidden answer, once it refused a read
	// (apiReader is nil from then on).
	refusal      error
	resolved     bool
	owner, child client.Object
	mutate       controllerutil.MutateFn
	opts         MutateOptions
	// given is the child as the caller passed it, which each round starts
	// from.
	given client.Object
	// exists is the create's AlreadyExists error that started a readFresh
	// round.
	exists error
	// key is the child's key among the verdicts (one there for the child
	// says this process wrote it: see [writeCall.ownWriteUnseen]), built
	// once (see verdictKey).
	key   memKey
	keyed bool
}

// write is CreateOrUpdate's call (see [writeCall.run]). It checks the
// reference from the objects alone and starts the call; the child's
// scope, which the REST mapper tells, is checked before the first write.
func write(ctx context.Context, c client.Client, owner, child client.Object, mutate controllerutil.MutateFn, opts []MutateOption) (controllerutil.OperationResult, error) {
	o := mutateOptions(opts)
	ctx = scope.Carry(ctx, c) // the State of c's cluster, for the calls through the wrapper below
	c = observe.Client(c, "ownership")
	if err := check(owner, child, c.Scheme()); err != nil {
		return controllerutil.OperationResultNone, err
	}
	w := writeCall{c: c, owner: owner, child: child, mutate: mutate, opts: o,
		given: child.DeepCopyObject().(client.Object)}
	return w.run(ctx)
}

// run reads, mutates and writes the child: create when there is none, else
// update. A create answered AlreadyExists (the read was stale: a cache
// that has not seen a child created a moment ago) reads the child again
// and goes on as an update of what it found, ownership checks included; an
// update answered NotFound with nothing written (the child was deleted
// since the read) creates it; an update answered with a conflict reads the
// child again through the API reader, where there is one, and decides
// anew. At most maxAttempts rounds.
func (w *writeCall) run(ctx context.Context) (controllerutil.OperationResult, error) {
	name := object.Described{Obj: w.child, Scheme: w.c.Scheme()} // formatted only in errors
	mode := readClient
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			object.Copy(w.child, w.given)
		}
		live, err := w.prepare(ctx, mode)
		if err != nil {
			return controllerutil.OperationResultNone, err
		}
		if live == nil {
			if err := validateScope(ctx, w.c, w.owner, w.child); err != nil {
				return controllerutil.OperationResultNone, err
			}
			key, _ := w.verdictKey(ctx)
			op, err := createChild(ctx, w.c, w.child, name, key)
			if op == controllerutil.OperationResultNone && apierrors.IsAlreadyExists(err) && attempt < maxAttempts {
				mode, w.exists = readFresh, err
				if status := apierrors.APIStatus(nil); errors.As(err, &status) {
					w.exists = status.(error) // the API error, not the message that names the child again
				}
				continue
			}
			return op, err
		}
		if object.Equal(live, w.child) {
			// mutate changed nothing, field for field: nothing to write,
			// nor to check (the common reconcile, without JSON work or a
			// REST mapping).
			return controllerutil.OperationResultNone, nil
		}
		op, err := updateChild(ctx, w.c, w.owner, live, w.child, name)
		switch {
		case op == controllerutil.OperationResultNone && apierrors.IsNotFound(err) && attempt < maxAttempts:
			mode = readNone
			continue
		case op == controllerutil.OperationResultNone && apierrors.IsConflict(err) && attempt < maxAttempts && w.rereader(ctx) != nil:
			// The child changed between the read and the write (its own
			// controller wrote its status, say, or the read was a cache
			// behind): read it from the API server and decide anew, rather
			// than fail the reconcile. Without an API reader, a read of
			// the cache could be as stale: the conflict is returned.
			mode = readFresh
			continue
		}
		return op, err
	}
}

// prepare reads the child as mode says, runs mutate on it, makes the
// child's owner record the live child's whatever mutate did to it (none
// for a child to create: keepRecord) and sets the controller reference.
// It returns a copy of the live object, or nil when there is none.
func (w *writeCall) prepare(ctx context.Context, mode readMode) (client.Object, error) {
	c, child := w.c, w.child
	key := client.ObjectKeyFromObject(child)
	live, err := w.read(ctx, key, mode)
	if err != nil {
		return nil, err
	}
	if live != nil {
		object.Copy(child, live)
	}
	if w.mutate != nil {
		if err := w.mutate(); err != nil {
			return nil, fmt.Errorf("ownership: mutating %s: %w", object.Describe(child, c.Scheme()), err)
		}
		if err := object.NormalizeJSON(child); err != nil { // a Go int in an unstructured child, say
			return nil, fmt.Errorf("ownership: mutating %s: %w", object.Describe(child, c.Scheme()), err)
		}
	}
	if client.ObjectKeyFromObject(child) != key {
		// A cluster-scoped child given a namespace reads back without one:
		// that is the reference refused, not a mutate at fault.
		if err := validateScope(ctx, c, w.owner, w.given); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("ownership: mutate changed the name or namespace of %s %s to %s", object.Kind(child, c.Scheme()), key, client.ObjectKeyFromObject(child))
	}
	if live != nil {
		keepServerMetadata(child, live)
	}
	rec := keepRecord(child, live)
	stale, err := setController(w.owner, child, rec, c.Scheme(), w.opts)
	if err != nil {
		return nil, err
	}
	if stale != nil {
		if err := ownerIsCurrent(ctx, w.rereader(ctx), c, w.owner, child, stale); err != nil {
			return nil, err
		}
	}
	return live, nil
}

// refused reports whether err is the API reader's Forbidden: the operator
// may not have get on the child's kind (a child is read from the cache,
// which needs list and watch), and the read is then made through the
// client instead, as without a reader.
func refused(r client.Reader, err error) bool {
	return r != nil && apierrors.IsForbidden(err)
}

// unseenHint says, in an error about a child the client did not show, why
// it was not read from the API server: refusal is the API reader's answer
// when it was asked and refused (Forbidden); nil, the client carries none.
func unseenHint(refusal error) string {
	if refusal != nil {
		return fmt.Sprintf("the API reader was refused: %v", refusal)
	}
	return "a client made by steady.NewClient reads it from the API server"
}

// rereader is the reader the call re-reads through (w.apiReader), resolved
// on its first use: the API reader of the State of w.c's cluster (see
// scope.Of: the one w.c carries, steady.NewClient's, else the one a
// reconcile.For body's context carries), else nil (the client is read
// again, backing off). A call that re-reads nothing, the common one, does
// not look in its context for one (nor wraps it).
func (w *writeCall) rereader(ctx context.Context) client.Reader {
	if !w.resolved {
		w.apiReader, w.resolved = scope.Of(ctx, w.c).APIReader(), true
	}
	return w.apiReader
}

// read returns the live child as mode says, or nil when there is none. It
// reads into a new object (a direct client decoding into the caller's
// child would keep map keys the live object does not have).
func (w *writeCall) read(ctx context.Context, key client.ObjectKey, mode readMode) (client.Object, error) {
	if mode == readNone {
		return nil, nil
	}
	// The child as errors name it, built only for an error.
	name := object.Described{Obj: w.given, Scheme: w.c.Scheme()}
	var r client.Reader = w.c
	if mode == readFresh && w.rereader(ctx) != nil {
		r = w.apiReader
	}
	live := object.EmptyLike(w.given)
	err := r.Get(ctx, key, live)
	if mode == readClient && apierrors.IsNotFound(err) && w.ownWriteUnseen(ctx) {
		// This process wrote the child (created it, most likely, a moment
		// ago) and the client does not show it: a cache behind our own
		// write. The API reader tells, where a create would be refused
		// (AlreadyExists) and cost a read all the same.
		mode, r = readFresh, w.apiReader
		live = object.EmptyLike(w.given)
		if err = r.Get(ctx, key, live); apierrors.IsNotFound(err) {
			w.forgetWrite(ctx) // gone since: the next create asks no more
		}
	}
	if mode == readFresh && refused(w.apiReader, err) {
		w.refusal = err
		w.apiReader, r = nil, w.c
		live = object.EmptyLike(w.given)
		err = r.Get(ctx, key, live)
	}
	if mode == readFresh && w.apiReader == nil {
		for _, d := range staleReadBackoff {
			if !apierrors.IsNotFound(err) {
				break
			}
			if werr := backoff.Sleep(ctx, d); werr != nil {
				return nil, fmt.Errorf("ownership: creating %s: it exists, but the client has not shown it yet: %w", name, errors.Join(w.exists, werr))
			}
			live = object.EmptyLike(w.given)
			err = r.Get(ctx, key, live)
		}
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("ownership: creating %s: it exists, but the client did not show it in %d reads (%s): %w",
				name, len(staleReadBackoff)+1, unseenHint(w.refusal), w.exists)
		}
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("ownership: reading %s: %w", name, err)
	}
	return live, nil
}

// ownWriteUnseen reports whether this process remembers a write of the
// child (a verdict of this call's kind: its create's answer, or a write
// the API server stored nothing of) and there is an API reader to read it
// through.
func (w *writeCall) ownWriteUnseen(ctx context.Context) bool {
	key, ok := w.verdictKey(ctx)
	return ok && remembered(key) && w.rereader(ctx) != nil
}

// forgetWrite forgets the remembered write of the child (see
// ownWriteUnseen): the API server says it is gone.
func (w *writeCall) forgetWrite(ctx context.Context) {
	if key, ok := w.verdictKey(ctx); ok {
		drop(key)
	}
}

// verdictKey is the child's key among the call's verdicts, built on its
// first use (the read that finds no child, then the create).
func (w *writeCall) verdictKey(ctx context.Context) (memKey, bool) {
	if !w.keyed {
		if gvk, err := object.GVK(w.given, w.c.Scheme()); err == nil {
			w.key = childKey(ctx, w.c, gvk, w.given, updateVerdicts)
		}
		w.keyed = true
	}
	return w.key, w.key.ok()
}

// keepServerMetadata puts back on child the metadata the API server owns,
// as read in live, which a mutate that builds the metadata anew drops: an
// update then still carries the resourceVersion that was read (without
// one, an update overwrites whatever changed since the read, or is
// refused, for custom resources).
func keepServerMetadata(child, live client.Object) {
	child.SetResourceVersion(live.GetResourceVersion())
	child.SetUID(live.GetUID())
	child.SetGeneration(live.GetGeneration())
	child.SetCreationTimestamp(live.GetCreationTimestamp())
	child.SetDeletionTimestamp(live.GetDeletionTimestamp())
	child.SetDeletionGracePeriodSeconds(live.GetDeletionGracePeriodSeconds())
	child.SetManagedFields(live.GetManagedFields())
}
