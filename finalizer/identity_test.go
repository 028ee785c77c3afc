package finalizer_test

import (
	"context"
	"slices"
	"testing"
)

// A deleting object whose last finalizer another actor removed after our
// read: the cleanups run on the copy (the Handler learns the object is gone
// only from its write), and the Result says nothing was written.
func TestGoneAtTheWriteIsNotAnUpdate(t *testing.T) {
	env.Require(t)
	h, ext, n, c, ns := setup(t)
	ctx := context.Background()
	w := create(t, c, ns, bucketFinalizer)
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	deleting, _ := stored(t, c, w)
	other := deleting.DeepCopy()
	other.Finalizers = nil
	if err := c.Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, ok := stored(t, c, w); ok {
		t.Fatal("the object is still there; the test needs it gone")
	}
	n.Reset()
	res, err := h.Handle(ctx, deleting)
	if err != nil || !res.Gone || !res.Deleting || res.Updated {
		t.Errorf("Handle = %+v, %v; want Gone, not Updated", res, err)
	}
	if ext.calls[bucketFinalizer] != 1 {
		t.Errorf("cleanups %v: they run before the write finds the object gone", ext.calls)
	}
	if n.Writes() != 1 {
		t.Errorf("requests %s: one write, answered NotFound", n)
	}
}

// Item 7: a stale copy of a deleted object whose name now holds a new
// object with the same finalizer: Handle must not strip the new object's
// finalizer (its cleanup never ran).
func TestHandleNeverTouchesARecreatedObject(t *testing.T) {
	env.Require(t)
	h, ext, _, c, ns := setup(t)
	ctx := context.Background()
	w := create(t, c, ns, bucketFinalizer)
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	stale, _ := stored(t, c, w)
	// The old object goes (someone removes the finalizer), a new one comes.
	gone := stale.DeepCopy()
	gone.Finalizers = nil
	if err := env.Client.Update(ctx, gone); err != nil {
		t.Fatal(err)
	}
	fresh := create(t, c, ns, bucketFinalizer)

	res, err := h.Handle(ctx, stale)
	if err != nil || !res.Deleting {
		t.Fatalf("Handle = %+v, %v", res, err)
	}
	got, ok := stored(t, c, w)
	if !ok || got.UID != fresh.UID || !slices.Equal(got.Finalizers, []string{bucketFinalizer}) {
		t.Errorf("the new object lost its finalizer: %+v (exists %v)", got, ok)
	}
	t.Logf("cleanups run: %v (for the old object only)", ext.calls)
}

// Item 14: Handle on a stale copy of an object that is gone: not an error.
func TestHandleOnAGoneObjectIsNotAnError(t *testing.T) {
	env.Require(t)
	h, _, _, c, ns := setup(t)
	ctx := context.Background()
	w := create(t, c, ns)
	stale := w.DeepCopy()
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	res, err := h.Handle(ctx, stale)
	if err != nil || !res.Gone || !res.Deleting {
		t.Errorf("Handle = %+v, %v; want Gone and no error", res, err)
	}
}

// A stale live copy of an object that is being deleted meanwhile: the API
// server refuses the new finalizer; Handle sees the deletion and runs the
// flow of a deleting object (none of ours is on it: nothing to clean up).
func TestHandleOnAStaleCopyOfADeletingObject(t *testing.T) {
	env.Require(t)
	h, ext, _, c, ns := setup(t)
	ctx := context.Background()
	w := create(t, c, ns, otherFinalizer)
	stale := w.DeepCopy()
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	res, err := h.Handle(ctx, stale)
	if err != nil || !res.Deleting {
		t.Fatalf("Handle = %+v, %v", res, err)
	}
	got, _ := stored(t, c, w)
	if !slices.Equal(got.Finalizers, []string{otherFinalizer}) || len(ext.calls) != 0 {
		t.Errorf("finalizers %v, cleanups %v", got.Finalizers, ext.calls)
	}
}
