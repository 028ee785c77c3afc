package identity

import (
	"reflect"
	"runtime"
	"testing"
)

type cacheLikeValue struct {
	data [48]byte
	next *cacheLikeValue
}

// TestIdentityIsNotAnAddress: what is remembered about a value that was
// collected is not found for a new value allocated at the same address.
func TestIdentityIsNotAnAddress(t *testing.T) {
	var reg Map[string]
	old := &cacheLikeValue{}
	addr := reflect.ValueOf(old).Pointer()
	if !reg.Update(old, func(string) string { return "old cache" }) {
		t.Fatal("a pointer has no identity")
	}
	if got, ok := reg.Get(old); !ok || got != "old cache" {
		t.Fatalf("get(old) = %q, %v", got, ok)
	}
	old = nil
	var kept []*cacheLikeValue
	var reused *cacheLikeValue
	for round := 0; round < 50 && reused == nil; round++ {
		runtime.GC()
		for i := 0; i < 2000; i++ {
			c := &cacheLikeValue{}
			kept = append(kept, c)
			if reflect.ValueOf(c).Pointer() == addr {
				reused = c
				break
			}
		}
	}
	if reused == nil {
		t.Skip("the allocator did not reuse the address; nothing to check")
	}
	if got, ok := reg.Get(reused); ok {
		t.Errorf("a new value at a freed value's address is taken for it: %q", got)
	}
	runtime.KeepAlive(kept)
}

func TestValuesWithoutIdentity(t *testing.T) {
	var reg Map[int]
	type empty struct{}
	for _, v := range []any{nil, 3, struct{}{}, &empty{}, (*cacheLikeValue)(nil)} {
		if reg.Update(v, func(int) int { return 1 }) {
			t.Errorf("%T has an identity", v)
		}
	}
}
