package testenv

import (
	"context"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var notDNSLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// Namespace creates a fresh namespace named after the test and returns its
// name. The namespace is deleted when the test and its subtests end; with
// [WithControllerManager] it then really goes away, with everything in it.
func (e *Environment) Namespace(t testing.TB) string {
	t.Helper()
	e.Require(t)
	prefix := strings.Trim(notDNSLabel.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(prefix) > 40 {
		prefix = strings.TrimRight(prefix[:40], "-")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("testenv: creating a namespace for %s: %v", t.Name(), err)
	}
	t.Cleanup(func() {
		if err := e.Client.Delete(context.Background(), ns); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("testenv: deleting namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}
