package identity

import (
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestOf(t *testing.T) {
	type big struct{ a, b int }
	x, y := &big{}, &big{}
	kx, ok := Of(x)
	if !ok {
		t.Fatal("a pointer has no identity")
	}
	if ky, _ := Of(y); kx == ky {
		t.Error("two values share an identity")
	}
	if kx2, _ := Of(x); kx != kx2 {
		t.Error("one value has two identities")
	}
	for _, v := range []any{nil, big{}, (*big)(nil), &struct{}{}} {
		if _, ok := Of(v); ok {
			t.Errorf("%#v has an identity", v)
		}
	}
	runtime.KeepAlive(x)
	runtime.KeepAlive(y)
}

func TestCluster(t *testing.T) {
	m1, m2 := meta.NewDefaultRESTMapper(nil), meta.NewDefaultRESTMapper(nil)
	a := fake.NewClientBuilder().WithRESTMapper(m1).Build()
	b := fake.NewClientBuilder().WithRESTMapper(m1).Build()
	c := fake.NewClientBuilder().WithRESTMapper(m2).Build()
	if Cluster(a) != Cluster(b) {
		t.Error("two clients of one REST mapper are two clusters")
	}
	if Cluster(a) == Cluster(c) {
		t.Error("clients of two REST mappers are one cluster")
	}
	if Cluster(nil) != (Key{}) {
		t.Error("a nil client has an identity")
	}
}
