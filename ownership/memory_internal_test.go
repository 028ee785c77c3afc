package ownership

import (
	"fmt"
	"testing"
)

// TestMemoryIsBounded: the memory keeps at most its size, forgets the
// least recently used first (a read counts as a use), and replaces what it
// remembers of a key.
func TestMemoryIsBounded(t *testing.T) {
	m := newMemory(3)
	for i := 0; i < 3; i++ {
		m.put(fmt.Sprint(i), memo{rv: fmt.Sprint(i)})
	}
	if _, ok := m.get("0"); !ok { // 0 is now the most recently used
		t.Fatal("0 forgotten early")
	}
	m.put("3", memo{rv: "3"}) // forgets 1
	if _, ok := m.get("1"); ok || m.len() != 3 {
		t.Errorf("len %d, 1 remembered %v; want 3 entries, 1 forgotten", m.len(), ok)
	}
	m.put("0", memo{rv: "new"})
	if v, _ := m.get("0"); v.rv != "new" || m.len() != 3 {
		t.Errorf("0 = %+v, len %d", v, m.len())
	}
	m.forget("0")
	if _, ok := m.get("0"); ok || m.len() != 2 {
		t.Errorf("0 not forgotten, len %d", m.len())
	}
	for i := 0; i < 100; i++ {
		m.put(fmt.Sprint("k", i), memo{})
	}
	if m.len() != 3 {
		t.Errorf("len %d after 100 puts, want 3", m.len())
	}
}
