package testenv_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	"github.com/steadyk8s/steady/testenv"
)

// killHelperEnv marks the child process of TestNoProcessSurvivesAKillDuringStart.
const killHelperEnv = "STEADY_TESTENV_KILL_HELPER"

func TestWithAssetsDirIsTheOnlyPlaceSearched(t *testing.T) {
	env.Require(t) // needs the binaries, as the shared environment does
	real, err := testenv.FindAssets(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBEBUILDER_ASSETS", real) // would be found, but must not be used
	empty := t.TempDir()
	e := testenv.New(testenv.WithAssetsDir(empty))
	err = e.Start()
	var ae *testenv.AssetsError
	if !errors.As(err, &ae) {
		t.Fatalf("Start error = %v, want *AssetsError", err)
	}
	if len(ae.Searched) != 1 || !strings.Contains(ae.Searched[0], empty) || !strings.Contains(err.Error(), empty) {
		t.Errorf("error does not name only %s: searched %v: %v", empty, ae.Searched, err)
	}
	if err := e.Stop(); err != nil {
		t.Error(err)
	}
	t.Setenv("KUBEBUILDER_ASSETS", empty) // would fail, but must not be used
	ok := testenv.New(testenv.WithAssetsDir(real))
	if err := ok.Start(); err != nil {
		t.Fatalf("Start with WithAssetsDir(%s): %v", real, err)
	}
	if err := ok.Stop(); err != nil {
		t.Error(err)
	}
}

// TestSkipsWithoutAssets runs this package's tests in a child process on a
// machine state with no assets anywhere: the tests that need the control
// plane skip, naming make envtest, unless the run requires the assets.
func TestSkipsWithoutAssets(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      []string
		wantFail bool
	}{
		{"not required: skip", nil, false},
		{"required by STEADY_TESTENV_REQUIRE", []string{testenv.RequireEnv + "=1"}, true},
		{"required by CI", []string{"CI=true"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestSkipHelper$", "-test.v")
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_DATA_HOME=" + t.TempDir(), skipHelperEnv + "=1"}
			cmd.Env = append(cmd.Env, tc.env...)
			out, err := cmd.CombinedOutput()
			if tc.wantFail {
				if err == nil || strings.Contains(string(out), "HELPER RAN") {
					t.Fatalf("want a failure before any test ran (err %v):\n%s", err, out)
				}
				if !strings.Contains(string(out), "make envtest") {
					t.Errorf("the failure does not name make envtest:\n%s", out)
				}
				return
			}
			if err != nil {
				t.Fatalf("want success with skipped tests, got %v:\n%s", err, out)
			}
			for _, want := range []string{"--- SKIP: TestSkipHelper", "make envtest", "PURE PART RAN"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(string(out), "HELPER RAN") {
				t.Errorf("the part after Namespace ran without a control plane:\n%s", out)
			}
		})
	}
}

// TestSkipHelper is run only as the child of TestSkipsWithoutAssets.
func TestSkipHelper(t *testing.T) {
	if os.Getenv(skipHelperEnv) == "" {
		t.Skip("helper process only")
	}
	fmt.Println("PURE PART RAN")
	env.Namespace(t)
	fmt.Println("HELPER RAN")
}

// TestNoProcessSurvivesAKillDuringStart SIGKILLs a test binary at several
// moments of Start (etcd just started, the API server just started, the
// controller manager just started, all started) and checks that no process of
// its control plane and none of its files survive.
func TestNoProcessSurvivesAKillDuringStart(t *testing.T) {
	env.Require(t) // needs the binaries, as the shared environment does
	if testing.Short() {
		t.Skip("starts control planes")
	}
	for _, point := range []string{testenv.EtcdBinary, testenv.APIServerBinary, testenv.ControllerManagerBinary, "started"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			tmp, err := os.MkdirTemp("", "steady-kill-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(tmp) })
			cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelper$", "-test.v")
			cmd.Env = append(os.Environ(), killHelperEnv+"=1", "TMPDIR="+tmp)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = cmd.Stdout
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var started atomic.Bool
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					if sc.Text() == "STARTED" {
						started.Store(true)
					}
				}
				io.Copy(io.Discard, stdout)
			}()
			deadline := time.Now().Add(2 * time.Minute)
			for {
				if point == "started" && started.Load() || point != "started" && len(processesNaming(tmp, point)) > 0 {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("%s never appeared", point)
				}
				time.Sleep(2 * time.Millisecond)
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			deadline = time.Now().Add(15 * time.Second)
			for {
				left := processesNaming(tmp, "")
				roots, _ := filepath.Glob(filepath.Join(tmp, "steady-testenv-*"))
				if len(left) == 0 && len(roots) == 0 {
					return
				}
				if time.Now().After(deadline) {
					for _, p := range left {
						_ = syscallKill(p)
					}
					t.Fatalf("after a SIGKILL at %s: processes %v and directories %v survive", point, left, roots)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// TestKillHelper is run only as the child of
// TestNoProcessSurvivesAKillDuringStart.
func TestKillHelper(t *testing.T) {
	if os.Getenv(killHelperEnv) == "" {
		t.Skip("helper process only")
	}
	e := testenv.New(testenv.WithControllerManager{})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Println("STARTED")
	time.Sleep(time.Minute)
}

// processesNaming lists the live processes (zombies aside) whose command
// line contains dir, and whose command name starts with name when it is set.
func processesNaming(dir, name string) []int {
	var out []int
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(data), dir) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if pid == os.Getpid() || !alive(pid) {
			continue
		}
		args := strings.Split(string(data), "\x00")
		if name != "" && filepath.Base(args[0]) != name {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// TestInstallCRDsMakesTheGarbageCollectorKnowTheKind installs a CRD after
// Start and checks that a child of one of its objects is collected promptly:
// on its own the garbage collector would find the kind only on its next
// 30-second resync.
func TestInstallCRDsMakesTheGarbageCollectorKnowTheKind(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	data, err := os.ReadFile("testdata/crds/widgets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	suffix := strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
	text := strings.NewReplacer("widgets.testenv.steady.dev", "gadget"+suffix+"s.late.steady.dev",
		"testenv.steady.dev", "late.steady.dev", "Widget", "Gadget"+suffix, "widget", "gadget"+suffix).Replace(string(data))
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal([]byte(text), crd); err != nil {
		t.Fatal(err)
	}
	if err := env.InstallCRDs(ctx, crd); err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	gvk := schema.GroupVersionKind{Group: "late.steady.dev", Version: "v1", Kind: "Gadget" + suffix}
	owner := &unstructured.Unstructured{}
	owner.SetGroupVersionKind(gvk)
	owner.SetNamespace(ns)
	owner.SetName("owner")
	if err := env.Client.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
			Name: owner.GetName(), UID: owner.GetUID()}}}}
	if err := env.Client.Create(ctx, child); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	// Well under the garbage collector's 30-second discovery resync.
	if !gone(t, env.Client, child, 10*time.Second) {
		t.Fatal("the child of a late CRD's object was not collected within 10s of its owner's deletion")
	}
}

// TestStartManagerRunsTheControllerUnderTest runs a small controller in a
// manager on the environment and sees it act.
func TestStartManagerRunsTheControllerUnderTest(t *testing.T) {
	env.Require(t)
	ns := env.Namespace(t)
	var requests atomic.Int64
	var counter testenv.RequestCounter
	mgr := env.StartManager(t, testenv.WithTransport(counter.Wrap), testenv.WithSetup(func(mgr ctrl.Manager) error {
		return ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Named("copier").
			Complete(crreconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
				requests.Add(1)
				var cm corev1.ConfigMap
				if err := mgr.GetClient().Get(ctx, req.NamespacedName, &cm); err != nil || cm.Namespace != ns {
					return ctrl.Result{}, client.IgnoreNotFound(err)
				}
				if cm.Labels["seen"] == "yes" {
					return ctrl.Result{}, nil
				}
				before := cm.DeepCopy()
				if cm.Labels == nil {
					cm.Labels = map[string]string{}
				}
				cm.Labels["seen"] = "yes"
				return ctrl.Result{}, mgr.GetClient().Patch(ctx, &cm, client.MergeFrom(before))
			}))
	}))
	if _, err := mgr.GetCache().GetInformer(t.Context(), &corev1.ConfigMap{}); err != nil { // a warm cache
		t.Fatal(err)
	}
	if mgr.GetScheme() != env.Scheme {
		t.Error("the manager does not use the environment's scheme")
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}}
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the controller labels the ConfigMap", func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(cm), cm); err != nil {
			return err
		}
		if cm.Labels["seen"] != "yes" {
			return fmt.Errorf("not labelled yet (%d reconciles)", requests.Load())
		}
		return nil
	})
	testenv.WaitIdle(t, "copier")
	before := requests.Load()
	testenv.WaitIdle(t, "copier")
	if requests.Load() != before {
		t.Errorf("reconciles while idle: %d", requests.Load()-before)
	}
	if counter.Get("PATCH") != 1 || counter.Get("WATCH") == 0 { // the informer lists by a streaming WATCH
		t.Errorf("the manager's requests were not counted as expected: %s", &counter)
	}
}

// TestDelayWatchesHoldsTheCacheBack: a write is in the API server at once
// and in the manager's cache only after the delay; a WithTransport before
// it still sees every request (the two compose).
func TestDelayWatchesHoldsTheCacheBack(t *testing.T) {
	ns := env.Namespace(t)
	var counter testenv.RequestCounter
	mgr := env.StartManager(t, testenv.WithTransport(counter.Wrap), testenv.WithTransport(testenv.DelayWatches(500*time.Millisecond)))
	ctx := context.Background()
	if _, err := mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{}); err != nil { // a warm cache
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	err := mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("the cache held the new object at once (err %v): the watch was not delayed", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for apierrors.IsNotFound(mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})) {
		if time.Now().After(deadline) {
			t.Fatal("the cache never caught up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if counter.Get("WATCH") == 0 {
		t.Errorf("the first WithTransport saw no watch: %s", &counter)
	}
}
