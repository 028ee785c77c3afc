package applyset_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/applyset"
)

// kubectl runs the kubectl of the envtest assets against the test control
// plane, with ApplySet support switched on.
func kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	return kubectlB(t, stdin, args...)
}

func kubectlB(t testing.TB, stdin string, args ...string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.Envtest.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(env.Envtest.ControlPlane.KubectlPath, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECTL_APPLYSET=true")
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func members(t *testing.T, ns, id string) []string {
	t.Helper()
	out, err := kubectl(t, "", "get", "configmaps,secrets", "-n", ns, "-l", applyset.PartOfLabel+"="+id, "-o", "name")
	if err != nil {
		t.Fatalf("kubectl get: %v\n%s", err, out)
	}
	names := strings.Fields(out)
	sort.Strings(names)
	return names
}

func resourceVersions(t *testing.T, ns string, names ...string) []string {
	t.Helper()
	var rvs []string
	for _, n := range names {
		o := configMap(ns, n)
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
		rvs = append(rvs, o.ResourceVersion)
	}
	return rvs
}

// TestKubectlInterop checks the four compatibility promises against the
// kubectl built with the envtest assets.
func TestKubectlInterop(t *testing.T) {
	env.Require(t)
	if _, err := os.Stat(env.Envtest.ControlPlane.KubectlPath); err != nil {
		t.Fatalf("kubectl is part of the envtest assets (make envtest builds it): %v", err)
	}
	ctx := context.Background()

	t.Run("kubectl refuses a steady set", func(t *testing.T) {
		ns := env.Namespace(t)
		set, _ := applyset.New(env.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}})
		if _, err := set.Apply(ctx, parse(t, cm("a")+cm("b"))); err != nil {
			t.Fatal(err)
		}
		before := resourceVersions(t, ns, "a", "b")
		out, err := kubectl(t, cm("a"), "apply", "-n", ns, "--server-side", "--prune", "--applyset=secret/set", "-f", "-")
		if err == nil || !strings.Contains(out, `managed by tooling "steady" instead of "kubectl"`) {
			t.Fatalf("kubectl on a steady set: err %v, output:\n%s", err, out)
		}
		if after := resourceVersions(t, ns, "a", "b"); strings.Join(after, ",") != strings.Join(before, ",") {
			t.Errorf("kubectl changed the set: %v -> %v", before, after)
		}
	})

	t.Run("kubectl prunes a set steady applied as kubectl", func(t *testing.T) {
		ns := env.Namespace(t)
		parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}}
		set, _ := applyset.New(env.Client, parent, applyset.Tooling("kubectl/v1.36.3"))
		if _, err := set.Apply(ctx, parse(t, cm("a")+cm("b"))); err != nil {
			t.Fatal(err)
		}
		out, err := kubectl(t, cm("a"), "apply", "-n", ns, "--server-side", "--prune", "--applyset=secret/set", "-f", "-")
		if err != nil {
			t.Fatalf("kubectl apply --prune: %v\n%s", err, out)
		}
		if !exists(t, configMap(ns, "a")) || exists(t, configMap(ns, "b")) {
			t.Errorf("after kubectl's prune: a %v, b %v; output:\n%s", exists(t, configMap(ns, "a")), exists(t, configMap(ns, "b")), out)
		}
		// The parent reads as steady would leave it for the same content.
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(parent), parent)
		if parent.Labels[applyset.IDLabel] != set.ID() || parent.Annotations[applyset.GroupKindsAnnotation] != "ConfigMap" {
			t.Errorf("parent after kubectl: %v %v", parent.Labels, parent.Annotations)
		}
	})

	t.Run("steady takes over a kubectl set only when told", func(t *testing.T) {
		ns := env.Namespace(t)
		out, err := kubectl(t, cm("one")+cm("two"), "apply", "-n", ns, "--server-side", "--prune", "--applyset=secret/kset", "-f", "-")
		if err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, out)
		}
		parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kset"}}
		set, _ := applyset.New(env.Client, parent)
		var te *applyset.ToolingError
		if _, err := set.Apply(ctx, parse(t, cm("one"))); !errorsAs(err, &te) {
			t.Fatalf("steady on kubectl's set: %v", err)
		}
		if !exists(t, configMap(ns, "two")) {
			t.Fatal("the refused apply pruned")
		}
		adopt, _ := applyset.New(env.Client, parent, applyset.Adopt{})
		res, err := adopt.Apply(ctx, parse(t, cm("one")))
		if err != nil || res.Count(applyset.Pruned) != 1 || exists(t, configMap(ns, "two")) || !exists(t, configMap(ns, "one")) {
			t.Fatalf("adopting apply: %+v, %v", res, err)
		}
	})

	t.Run("kubectl lists exactly steady's members", func(t *testing.T) {
		ns := env.Namespace(t)
		set, _ := applyset.New(env.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"}})
		if _, err := set.Apply(ctx, parse(t, cm("a")+cm("b")+secret("c"))); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Create(ctx, configMap(ns, "not-a-member")); err != nil {
			t.Fatal(err)
		}
		got := members(t, ns, set.ID())
		want := []string{"configmap/a", "configmap/b", "secret/c"}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("kubectl get -l part-of = %v, want %v", got, want)
		}
	})
}
