package testapi

import (
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/internal/scope"
)

// Remembering returns c (a direct client) carrying a State of its own, as
// steady.NewClient's client carries one: ownership remembers its verdicts
// between calls through it. Its informers are fakes that never show an
// event, so nothing ends what it remembers: for the tests of what is
// remembered, not of when it is forgotten (internal/scope's tests and
// steady's TestMemoryFollowsTheInformer do that).
func Remembering(c client.Client, scheme *runtime.Scheme) client.Client {
	return scope.Wrap(c, scope.New(c, nil, &informertest.FakeInformers{Scheme: scheme}))
}
