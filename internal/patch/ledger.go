package patch

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The ledger remembers, for this process, the resourceVersion of the last
// write [Writer.Patch] made to each object, by UID (UIDs are unique across
// clusters, so one ledger serves every manager of the process). A read
// older than that entry is a lagging cache that does not hold our own
// write yet: reconciling from it would compute from the past.
//
// An entry is dropped after ledgerTTL (a cache that lags by minutes is
// broken, not slow) and the ledger holds at most ledgerMax entries,
// dropping the oldest first.
const (
	ledgerTTL = 10 * time.Minute
	ledgerMax = 1 << 16
)

type ledgerEntry struct {
	rv string
	at time.Time
}

var ledger = struct {
	mu     sync.Mutex
	m      map[types.UID]ledgerEntry
	pruned time.Time
}{m: map[types.UID]ledgerEntry{}}

// recordWrite remembers that this process wrote obj at its
// resourceVersion.
func recordWrite(obj client.Object) {
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	if uid == "" || rv == "" {
		return
	}
	now := time.Now()
	ledger.mu.Lock()
	defer ledger.mu.Unlock()
	if prev, ok := ledger.m[uid]; ok && olderRV(rv, prev.rv) {
		return // an answer that arrived after a newer one
	}
	ledger.m[uid] = ledgerEntry{rv: rv, at: now}
	if len(ledger.m) > ledgerMax || now.Sub(ledger.pruned) > ledgerTTL {
		pruneLedger(now)
	}
}

// pruneLedger drops expired entries, then the oldest ones while over the
// bound. The caller holds the lock.
func pruneLedger(now time.Time) {
	ledger.pruned = now
	var oldest time.Time
	for uid, e := range ledger.m {
		if now.Sub(e.at) > ledgerTTL {
			delete(ledger.m, uid)
		} else if oldest.IsZero() || e.at.Before(oldest) {
			oldest = e.at
		}
	}
	// Still over the bound: drop the older half of the time span.
	for len(ledger.m) > ledgerMax {
		cut := oldest.Add(now.Sub(oldest) / 2)
		for uid, e := range ledger.m {
			if !e.at.After(cut) {
				delete(ledger.m, uid)
			}
		}
		oldest = cut
	}
}

// OwnWriteAhead reports whether this process wrote obj (by UID) at a
// resourceVersion newer than obj's, and that resourceVersion: obj was then
// read from a cache that does not hold our own write yet.
func OwnWriteAhead(obj client.Object) (string, bool) {
	uid := obj.GetUID()
	if uid == "" {
		return "", false
	}
	ledger.mu.Lock()
	e, ok := ledger.m[uid]
	ledger.mu.Unlock()
	if !ok || time.Since(e.at) > ledgerTTL {
		return "", false
	}
	return e.rv, olderRV(obj.GetResourceVersion(), e.rv)
}

// ForgetWrite drops the ledger's entry for obj's UID when obj, read from
// the API server itself (not a cache), is older than it: the server's own
// answer says the entry is wrong (the store was restored from a backup, say),
// and it would otherwise make every read of the object look stale until it
// expires.
func ForgetWrite(obj client.Object) {
	ledger.mu.Lock()
	defer ledger.mu.Unlock()
	if e, ok := ledger.m[obj.GetUID()]; ok && olderRV(obj.GetResourceVersion(), e.rv) {
		delete(ledger.m, obj.GetUID())
	}
}
