package harness

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1 "github.com/steadyk8s/steady/bench/api/v1alpha1"
)

// The kinds a mirror follows, in the order of their informers' handlers.
const (
	kindTeam = iota
	kindConfigMap
	kindServiceAccount
	kindRoleBinding
)

// mirrorKinds are empty objects of the kinds a mirror follows, by kind.
func mirrorKinds() [4]client.Object {
	return [4]client.Object{kindTeam: &benchv1.Team{}, kindConfigMap: &corev1.ConfigMap{}, kindServiceAccount: &corev1.ServiceAccount{}, kindRoleBinding: &rbacv1.RoleBinding{}}
}

// mirror holds, by Team name, the latest Team, ConfigMap, ServiceAccount
// and RoleBinding of that name the manager's cache holds, as the event
// handlers of its four informers deliver them (handler), and which names
// changed since the last poll took them (take). A phase's convergence and
// deletion checks read it instead of listing the cache: a poll judges the
// changed and the still pending Teams only, and lists nothing.
//
// The objects are the cache's own: never modified, only replaced (an
// update hands over a new object). Handlers run on the informers'
// goroutines; every field is guarded by mu, and the critical sections
// copy pointers and counters only (a name's entry is made once, when it
// is first seen, and kept, with nil objects once they are deleted).
type mirror struct {
	mu     sync.Mutex
	byName map[string]*mirrored
	dirty  []*mirrored // entries changed since the last take, each once
	teams  int         // entries with a Team
	owned  int         // children with a Team as controller
	seq    uint64      // numbers the takes
}

// mirrored is one name's objects in a mirror.
type mirrored struct {
	objs  teamObjs // the objects only
	dirty bool     // in mirror.dirty
	seen  uint64   // the take that last took it
}

// newMirror returns an empty mirror with room for n names.
func newMirror(n int) *mirror {
	return &mirror{byName: make(map[string]*mirrored, n), dirty: make([]*mirrored, 0, n)}
}

// handler is the event handler of the informer of kind.
func (m *mirror) handler(kind int) toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.put(kind, obj) },
		UpdateFunc: func(_, obj any) { m.put(kind, obj) },
		DeleteFunc: func(obj any) { m.remove(kind, obj) },
	}
}

// put records obj, of kind, as the latest of its name.
func (m *mirror) put(kind int, obj any) {
	o, ok := obj.(client.Object)
	if !ok {
		return
	}
	name := o.GetName()
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.byName[name]
	if e == nil {
		e = &mirrored{}
		m.byName[name] = e
	}
	m.set(e, kind, o)
}

// remove forgets the object of kind named as obj, a deleted object or
// the tombstone of one whose deletion the informer did not see (its last
// known state, or only its key).
func (m *mirror) remove(kind int, obj any) {
	var name string
	switch o := obj.(type) {
	case client.Object:
		name = o.GetName()
	case toolscache.DeletedFinalStateUnknown:
		if last, ok := o.Obj.(client.Object); ok {
			name = last.GetName()
		} else if _, n, err := toolscache.SplitMetaNamespaceKey(o.Key); err == nil {
			name = n
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.byName[name]; e != nil {
		m.set(e, kind, nil)
	}
}

// set puts obj (nil: none) as e's object of kind, keeps the counts and
// marks e changed. Called with mu held.
func (m *mirror) set(e *mirrored, kind int, obj client.Object) {
	var teams, owned int
	switch kind {
	case kindTeam:
		teams, _ = swap(&e.objs.team, obj)
	case kindConfigMap:
		_, owned = swap(&e.objs.cm, obj)
	case kindServiceAccount:
		_, owned = swap(&e.objs.sa, obj)
	case kindRoleBinding:
		_, owned = swap(&e.objs.rb, obj)
	}
	m.teams += teams
	m.owned += owned
	m.mark(e)
}

// mark puts e in the changed entries. Called with mu held.
func (m *mirror) mark(e *mirrored) {
	if !e.dirty {
		e.dirty = true
		m.dirty = append(m.dirty, e)
	}
}

// swap puts obj (nil, or of another type: none) into slot and returns by
// how much the number of objects, and of objects with a Team as
// controller, changed.
func swap[T any, P interface {
	*T
	client.Object
}](slot *P, obj client.Object) (objs, owned int) {
	if old := *slot; old != nil {
		objs--
		if teamControlled(old) {
			owned--
		}
	}
	o, _ := obj.(P)
	if o != nil {
		objs++
		if teamControlled(o) {
			owned++
		}
	}
	*slot = o
	return objs, owned
}

// markAll marks every entry changed: the next take takes every Team.
func (m *mirror) markAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.byName {
		m.mark(e)
	}
}

// take appends to batch, if the mirror holds want Teams, the Teams of the
// entries changed since the last take and of again, each once, and
// returns it with the number of Teams; otherwise it takes nothing (the
// changed entries stay changed) and returns batch as it was. Each item
// names the entry it came from.
func (m *mirror) take(want int, again []*mirrored, batch []teamObjs) (_ []teamObjs, teams int, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.teams != want {
		return batch, m.teams, false
	}
	m.seq++
	for _, e := range m.dirty {
		e.dirty = false
		batch = m.took(e, batch)
	}
	m.dirty = m.dirty[:0]
	for _, e := range again {
		batch = m.took(e, batch)
	}
	return batch, m.teams, true
}

// took appends e's objects to batch unless e has no Team or this take
// took it already. Called with mu held.
func (m *mirror) took(e *mirrored, batch []teamObjs) []teamObjs {
	if e.seen == m.seq || e.objs.team == nil {
		return batch
	}
	e.seen = m.seq
	o := e.objs
	o.entry = e
	return append(batch, o)
}

// left returns the number of Teams, and of children with a Team as
// controller, the mirror holds.
func (m *mirror) left() (teams, children int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.teams, m.owned
}

// mirrorPoll is what the polls of a mirror keep from one to the next;
// used by the polling goroutine only.
type mirrorPoll struct {
	pending []*mirrored // the entries whose Team the last poll found pending
	batch   []teamObjs  // reused
}

// reset forgets the pending Teams (the next take takes them, after
// mirror.markAll).
func (p *mirrorPoll) reset() {
	clear(p.pending)
	p.pending = p.pending[:0]
}

// poll judges, with check and v, the Teams of m changed since the last
// poll and those the last poll found pending, and returns "" when all
// want Teams exist and are converged, or what is not yet: the answer a
// full check of every Team of m gives, if v and check are those of every
// poll since the last reset (of m, p and v), and check depends on the
// objects only.
func (p *mirrorPoll) poll(m *mirror, want int, v *verdicts, check func(*teamObjs) string) string {
	batch, teams, ok := m.take(want, p.pending, p.batch[:0])
	if !ok {
		return fmt.Sprintf("%d of %d Teams exist", teams, want)
	}
	judge(batch, v, check)
	clear(p.pending)
	p.pending = p.pending[:0]
	for i := range batch {
		if batch[i].why != "" {
			p.pending = append(p.pending, batch[i].entry)
		}
	}
	why := summarize(batch, teams)
	clear(batch) // hold no object until the next poll
	p.batch = batch
	return why
}
