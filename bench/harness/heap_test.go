package harness

import (
	"runtime"
	"testing"
	"time"
)

// TestSampleHeapSeesAPeakGoneBeforeTheEnd: the sampler reports the heap of
// a burst that was collected before the phase ended, not only the heap at
// its start and end.
func TestSampleHeapSeesAPeakGoneBeforeTheEnd(t *testing.T) {
	runtime.GC()
	const size = 64 << 20
	stop := sampleHeap()
	burst := make([]byte, size)
	for i := range burst {
		burst[i] = byte(i)
	}
	time.Sleep(500 * time.Millisecond) // some 250 periods: a loaded machine may hold the sampler back a while
	runtime.KeepAlive(burst)
	burst = nil
	runtime.GC()
	peak := stop()
	if peak < size {
		t.Fatalf("peak %d bytes, want at least the %d-byte burst", peak, size)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc >= size {
		t.Fatalf("the burst was not collected (HeapAlloc %d): the test proves nothing", ms.HeapAlloc)
	}
}

// TestGCCPUCountsCollections: the GC CPU of a phase grows with the
// collections run in it.
func TestGCCPUCountsCollections(t *testing.T) {
	g0 := gcCPU()
	keep := make([][]byte, 0, 1024)
	for range 20 {
		for range 1024 {
			keep = append(keep, make([]byte, 1024))
		}
		runtime.GC()
		keep = keep[:0]
	}
	runtime.KeepAlive(keep)
	if g := gcCPU() - g0; g <= 0 {
		t.Fatalf("GC CPU grew by %v over 20 collections", g)
	}
}
