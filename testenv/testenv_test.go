package testenv_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/steadyk8s/steady/testenv"
)

// env is the package's shared control plane, with the controller manager
// and its deployment and replicaset controllers.
var env = testenv.New(testenv.WithControllerManager{Controllers: []string{"deployment", "replicaset"}},
	testenv.WithCRDs{Paths: []string{"testdata/crds"}})

// panicHelperEnv marks the child process of TestNoProcessLeftBehindOnPanic.
const panicHelperEnv = "STEADY_TESTENV_PANIC_HELPER"

// skipHelperEnv marks the child process of TestSkipsWithoutAssets.
const skipHelperEnv = "STEADY_TESTENV_SKIP_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(panicHelperEnv) != "" || os.Getenv(killHelperEnv) != "" {
		os.Exit(m.Run()) // the helper starts its own control plane
	}
	os.Exit(env.Run(m))
}

var widgetGVK = schema.GroupVersionKind{Group: "testenv.steady.dev", Version: "v1", Kind: "Widget"}

// deletionWorks deletes an owner (a custom resource) with a child, and a
// namespace, and reports whether each really went away within wait.
func deletionWorks(t *testing.T, e *testenv.Environment, wait time.Duration) (childCollected, namespaceGone bool) {
	t.Helper()
	ctx := context.Background()
	ns := e.Namespace(t)
	owner := &unstructured.Unstructured{}
	owner.SetGroupVersionKind(widgetGVK)
	owner.SetNamespace(ns)
	owner.SetName("owner")
	if err := e.Client.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: widgetGVK.GroupVersion().String(), Kind: widgetGVK.Kind,
			Name: owner.GetName(), UID: owner.GetUID(), Controller: new(true)}}}}
	if err := e.Client.Create(ctx, child); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	childCollected = gone(t, e.Client, child, wait)

	victim := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "victim-"}}
	if err := e.Client.Create(ctx, victim); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: victim.Name, Name: "content"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Delete(ctx, victim); err != nil {
		t.Fatal(err)
	}
	namespaceGone = gone(t, e.Client, victim, wait)
	return childCollected, namespaceGone
}

// gone polls until obj is NotFound or wait has passed.
func gone(t *testing.T, c client.Client, obj client.Object, wait time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return true
		}
		if err != nil {
			t.Fatalf("getting %s: %v", obj.GetName(), err)
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDeletionNeedsControllerManager shows both halves: with the option, the
// garbage collector and the namespace controller do their work; without it,
// neither happens, as in plain envtest.
func TestDeletionNeedsControllerManager(t *testing.T) {
	env.Require(t)
	if testing.Short() {
		t.Skip("starts a second control plane")
	}
	fsys := fstest.MapFS{}
	data, err := os.ReadFile("testdata/crds/widgets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fsys["crds/widgets.yaml"] = &fstest.MapFile{Data: data}
	plain := testenv.New(testenv.WithCRDs{FS: fsys, Paths: []string{"crds"}})
	if err := plain.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := plain.Stop(); err != nil {
			t.Error(err)
		}
	})

	for _, tc := range []struct {
		name string
		env  *testenv.Environment
		want bool
	}{
		{"with controller manager", env, true},
		{"without controller manager", plain, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// With the controller manager both take well under a second; wait
			// long enough that a miss is not a matter of timing.
			wait := 30 * time.Second
			if !tc.want {
				wait = 3 * time.Second
			}
			collected, nsGone := deletionWorks(t, tc.env, wait)
			if collected != tc.want {
				t.Errorf("child of a deleted owner collected = %v, want %v", collected, tc.want)
			}
			if nsGone != tc.want {
				t.Errorf("deleted namespace gone = %v, want %v", nsGone, tc.want)
			}
		})
	}
}

func TestNamespaceIsFreshAndNamedAfterTheTest(t *testing.T) {
	env.Require(t)
	a, b := env.Namespace(t), env.Namespace(t)
	if a == b {
		t.Fatalf("two calls gave the same namespace %q", a)
	}
	if !strings.HasPrefix(a, "testnamespaceisfreshandnamedafterthet") {
		t.Errorf("namespace %q is not named after the test", a)
	}
	var ns corev1.Namespace
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: a}, &ns); err != nil {
		t.Fatal(err)
	}
}

func TestMissingAssetsNameTheFix(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", t.TempDir())
	_, err := testenv.FindAssets(true)
	var ae *testenv.AssetsError
	if !errors.As(err, &ae) {
		t.Fatalf("FindAssets error = %v, want *AssetsError", err)
	}
	if got := strings.Join(ae.Missing, ","); got != "kube-apiserver,etcd,kube-controller-manager" {
		t.Errorf("Missing = %s", got)
	}
	if !strings.Contains(err.Error(), "make envtest") {
		t.Errorf("error does not say how to get the assets: %v", err)
	}
	e := testenv.New()
	if err := e.Start(); !errors.As(err, &ae) {
		t.Fatalf("Start error = %v, want *AssetsError", err)
	}
	if err := e.Stop(); err != nil {
		t.Errorf("Stop after a failed Start: %v", err)
	}
}

func TestBadCRDManifestNamesFileAndDocument(t *testing.T) {
	env.Require(t) // needs the binaries, as the shared environment does
	fsys := fstest.MapFS{"crds/bad.yaml": &fstest.MapFile{Data: []byte("kind: ConfigMap\napiVersion: v1\nmetadata: {name: x}\n")}}
	err := testenv.New(testenv.WithCRDs{FS: fsys, Paths: []string{"crds/bad.yaml"}}).Start() // a file, not a directory
	if err == nil || !strings.Contains(err.Error(), "crds/bad.yaml, document 0") || !strings.Contains(err.Error(), "ConfigMap") {
		t.Fatalf("Start error = %v, want one naming crds/bad.yaml, document 0 and its kind", err)
	}
}

// TestNoProcessLeftBehindOnPanic runs a test binary whose test panics with a
// control plane running, and checks that its processes and files are gone.
func TestNoProcessLeftBehindOnPanic(t *testing.T) {
	env.Require(t) // needs the binaries, as the shared environment does
	if testing.Short() {
		t.Skip("starts a second control plane")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPanicHelper$", "-test.v")
	cmd.Env = append(os.Environ(), panicHelperEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || !strings.Contains(string(out), "panic: deliberate") {
		t.Fatalf("helper did not panic as planned (err %v):\n%s", err, out)
	}
	var pids []int
	var root string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if f, ok := strings.CutPrefix(sc.Text(), "PID "); ok {
			pid, _ := strconv.Atoi(f)
			pids = append(pids, pid)
		}
		if f, ok := strings.CutPrefix(sc.Text(), "ROOT "); ok {
			root = f
		}
	}
	if len(pids) != 3 || root == "" {
		t.Fatalf("helper reported pids %v and root %q, want etcd, kube-apiserver and kube-controller-manager:\n%s", pids, root, out)
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d still runs after the test binary panicked", pid)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for {
		if _, err := os.Stat(root); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still exists after the test binary panicked", root)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return !os.IsNotExist(err)
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) == 0 || fields[0] != "Z"
}

// TestPanicHelper is run only as the child of TestNoProcessLeftBehindOnPanic.
func TestPanicHelper(t *testing.T) {
	if os.Getenv(panicHelperEnv) == "" {
		t.Skip("helper process only")
	}
	e := testenv.New(testenv.WithControllerManager{})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	pids, err := testenv.ChildProcesses(testenv.EtcdBinary, testenv.APIServerBinary, testenv.ControllerManagerBinary)
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		fmt.Printf("PID %d\n", pid)
	}
	fmt.Printf("ROOT %s\n", filepath.Dir(e.Envtest.ControlPlane.Etcd.DataDir))
	panic("deliberate: a test panics with the control plane running")
}

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
