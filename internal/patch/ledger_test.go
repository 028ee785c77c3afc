package patch

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func at(uid, rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetUID(types.UID(uid))
	u.SetResourceVersion(rv)
	return u
}

func TestLedger(t *testing.T) {
	recordWrite(at("l-1", "10"))
	for _, tc := range []struct {
		rv     string
		behind bool
	}{{"9", true}, {"10", false}, {"11", false}} {
		if got, behind := OwnWriteAhead(at("l-1", tc.rv)); behind != tc.behind || got != "10" {
			t.Errorf("read at %s: (%s, %v), want (10, %v)", tc.rv, got, behind, tc.behind)
		}
	}
	if _, behind := OwnWriteAhead(at("l-other", "1")); behind {
		t.Error("an object never written is behind")
	}
	recordWrite(at("l-1", "8")) // an answer that arrived after a newer one
	if got, _ := OwnWriteAhead(at("l-1", "9")); got != "10" {
		t.Errorf("an older answer replaced the newer: %s", got)
	}
	ForgetWrite(at("l-1", "12")) // newer than the entry: nothing to forget
	if _, behind := OwnWriteAhead(at("l-1", "9")); !behind {
		t.Error("forgotten by a newer read")
	}
	ForgetWrite(at("l-1", "5")) // the API server answers older: the entry is wrong
	if _, behind := OwnWriteAhead(at("l-1", "5")); behind {
		t.Error("not forgotten by an older answer of the API server")
	}
	// A UID without a resourceVersion, or none at all, is not recorded.
	recordWrite(at("", "3"))
	recordWrite(at("l-2", ""))
	if _, behind := OwnWriteAhead(at("l-2", "1")); behind {
		t.Error("recorded without a resourceVersion")
	}
}

func TestLedgerIsBounded(t *testing.T) {
	for i := range ledgerMax + 100 {
		u := at(fmt.Sprintf("b-%d", i), "1")
		recordWrite(u)
	}
	ledger.mu.Lock()
	n := len(ledger.m)
	// Expired entries go first.
	ledger.m["b-old"] = ledgerEntry{rv: "1", at: time.Now().Add(-2 * ledgerTTL)}
	pruneLedger(time.Now())
	_, old := ledger.m["b-old"]
	ledger.mu.Unlock()
	if n > ledgerMax || old {
		t.Errorf("%d entries (bound %d), expired kept %v", n, ledgerMax, old)
	}
}
