package readmostly

import (
	"fmt"
	"sync"
	"testing"
)

// TestMap: a key stored is loaded, with its last value; a key never
// stored is not; readers racing with writers see every key stored before
// they started, and the map holds every key stored in the end (go test
// -race checks that nothing is shared unsafely).
func TestMap(t *testing.T) {
	var m Map[[2]string, int]
	if _, ok := m.Load([2]string{"a"}); ok || m.Len() != 0 {
		t.Fatal("the zero Map is not empty")
	}
	m.Store([2]string{"a", "b"}, 1)
	m.Store([2]string{"a", "b"}, 1) // unchanged: no copy, still there
	m.Store([2]string{"a", "c"}, 2)
	m.Store([2]string{"a", "c"}, 3)
	if v, ok := m.Load([2]string{"a", "b"}); !ok || v != 1 {
		t.Errorf("a/b = %v, %v", v, ok)
	}
	if v, ok := m.Load([2]string{"a", "c"}); !ok || v != 3 || m.Len() != 2 {
		t.Errorf("a/c = %v, %v; len %d", v, ok, m.Len())
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				m.Store([2]string{fmt.Sprint(w), fmt.Sprint(i)}, i)
				if v, ok := m.Load([2]string{fmt.Sprint(w), fmt.Sprint(i)}); !ok || v != i {
					t.Errorf("%d/%d = %v, %v right after it was stored", w, i, v, ok)
				}
				if _, ok := m.Load([2]string{"a", "b"}); !ok {
					t.Error("a/b lost")
				}
			}
		})
	}
	wg.Wait()
	if m.Len() != 2+4*200 {
		t.Errorf("len %d, want %d", m.Len(), 2+4*200)
	}
}
