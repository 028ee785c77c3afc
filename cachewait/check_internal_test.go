package cachewait

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// snapshot is a reader holding one ConfigMap, or none (nil): the cache at
// some point of a history, or the API server at its end.
type snapshot struct{ cm *corev1.ConfigMap }

func (s snapshot) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if s.cm == nil {
		return apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name)
	}
	s.cm.DeepCopyInto(obj.(*corev1.ConfigMap))
	return nil
}

func (snapshot) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not used")
}

// history is what one name went through: states[i] after event i
// (states[0]: before the first, absent).
type history struct {
	states []*corev1.ConfigMap
	// answers[i] is the API server's answer to event i (nil for a plain
	// delete), and kinds[i] what event i was.
	answers []*corev1.ConfigMap
	kinds   []string
}

func randomHistory(r *rand.Rand) history {
	h := history{states: []*corev1.ConfigMap{nil}, answers: []*corev1.ConfigMap{nil}, kinds: []string{""}}
	var cur *corev1.ConfigMap
	rv, uids := 100, 0
	for n := 1 + r.Intn(12); n > 0; n-- {
		rv++
		var answer *corev1.ConfigMap
		kind := ""
		switch {
		case cur == nil:
			uids++
			cur = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x", UID: types.UID(fmt.Sprint("uid-", uids))}}
			if r.Intn(2) == 0 {
				cur.Finalizers = []string{"f"}
			}
			cur.Labels = randomLabels(r)
			kind, answer = "create", cur
		case cur.DeletionTimestamp != nil && r.Intn(2) == 0:
			answer = cur.DeepCopy()
			answer.Finalizers = nil
			kind, cur = "release", nil
		case r.Intn(3) == 0:
			if len(cur.Finalizers) == 0 {
				kind, cur = "delete", nil
			} else if cur.DeletionTimestamp == nil {
				cur = cur.DeepCopy()
				now := metav1.Now()
				cur.DeletionTimestamp = &now
				kind, answer = "mark", cur
			} else {
				rv-- // deleting again changes nothing
				continue
			}
		default:
			cur = cur.DeepCopy()
			cur.Data = map[string]string{"rv": strconv.Itoa(rv)}
			cur.Labels = randomLabels(r)
			kind, answer = "update", cur
		}
		if answer != nil {
			answer = answer.DeepCopy()
			answer.ResourceVersion = strconv.Itoa(rv)
		}
		if cur != nil {
			cur.ResourceVersion = strconv.Itoa(rv)
		}
		h.states = append(h.states, cur)
		h.answers = append(h.answers, answer)
		h.kinds = append(h.kinds, kind)
	}
	return h
}

// randomLabels returns no label, app=a or app=b.
func randomLabels(r *rand.Rand) map[string]string {
	switch r.Intn(3) {
	case 0:
		return map[string]string{"app": "a"}
	case 1:
		return map[string]string{"app": "b"}
	}
	return nil
}

// goneAtEnd reports whether the object uid is no longer there at the end.
func (h history) goneAtEnd(uid types.UID) bool {
	end := h.states[len(h.states)-1]
	return end == nil || end.UID != uid
}

// TestCheckProperties drives the caught-up rules over random histories of
// one name, with the cache at every point of them:
//   - safety: a write (or delete) counts as caught up for good only when
//     the cache has processed it, or the object it wrote is gone for good;
//     it lets a read (of everything, or of app=a) go on only when the read
//     would show no state of the object older than the write: another
//     object or none, and none only where the object is gone for good or
//     the read does not select it as the write left it;
//   - liveness, with an API reader: once the cache has processed it, no
//     read waits for it.
func TestCheckProperties(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	ctx := context.Background()
	past := time.Now().Add(-time.Hour)
	for iter := 0; iter < 3000; iter++ {
		h := randomHistory(r)
		for w := 1; w < len(h.states); w++ {
			// The Client sets unseen when a write of the UID was pending.
			unseen := r.Intn(2) == 0
			var mk func() *expectation
			switch h.kinds[w] {
			case "create", "update", "release":
				mk = func() *expectation {
					e := newWrite(h.answers[w], nil, nil)
					e.created = h.kinds[w] == "create"
					e.unseen = unseen
					return e
				}
			case "mark", "delete":
				mk = func() *expectation {
					e := newDelete(h.states[w-1], nil, modeDeleted)
					e.unseen = unseen
					return e
				}
			default:
				continue
			}
			e0 := mk()
			uid := e0.uid
			// What the write left of the object: the answer, or for a
			// delete the object as it was (marked, or gone).
			left := h.answers[w]
			if left == nil || e0.mode == modeDeleted {
				left = h.states[w-1]
			}
			// A read of everything, or of app=a.
			rs := readScope{}
			if r.Intn(2) == 0 {
				rs.labels = labels.SelectorFromSet(labels.Set{"app": "a"})
			}
			created := w
			for created > 0 && h.states[created-1] != nil && h.states[created-1].UID == uid {
				created--
			}
			for _, withAPI := range []bool{false, true} {
				o := WaitOptions{APIReaderAfter: time.Nanosecond}.withDefaults()
				if withAPI {
					o.APIReader = snapshot{h.states[len(h.states)-1]}
				}
				// The cache at each point, checked afresh and in sequence.
				seq := mk()
				seq.at = past
				for c := range h.states {
					if e0.mode == modeDeleted && !e0.unseen && c < created {
						continue // the Client claims the cache saw the object
					}
					fresh := mk()
					fresh.at = past
					for name, e := range map[string]*expectation{"fresh": fresh, "in sequence": seq} {
						st, _, err := e.check(ctx, snapshot{h.states[c]}, o, nil, rs)
						if err != nil {
							t.Fatal(err)
						}
						where := fmt.Sprintf("seed %d iter %d, %s check of event %d (%s) with the cache after event %d, API reader %v, history %v",
							seed, iter, name, w, h.kinds[w], c, withAPI, h.kinds)
						if st == caughtUp && c < w && !h.goneAtEnd(uid) {
							t.Fatalf("%s: caught up before the cache processed the write", where)
						}
						if cur := h.states[c]; st != waiting && c < w && cur != nil && cur.UID == uid && selects(rs, cur) {
							t.Fatalf("%s: a read of %v may go on while the cache shows an older state of the object", where, rs.labels)
						}
						if st == readable && c < w && h.states[c] == nil && !h.goneAtEnd(uid) && selects(rs, left) {
							t.Fatalf("%s: a read of %v may go on while the cache lacks an object that exists", where, rs.labels)
						}
						if withAPI && c >= w && st == waiting {
							t.Fatalf("%s: a read waits although the cache processed the write", where)
						}
					}
				}
			}
		}
	}
}

// selects reports whether a read of rs shows obj.
func selects(rs readScope, obj *corev1.ConfigMap) bool {
	return rs.labels == nil || rs.labels.Matches(labels.Set(obj.Labels))
}
