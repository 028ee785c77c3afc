package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// controllerManagerControllers are the controllers always started: the
// ones that make deletion behave as on a cluster ([WithControllerManager]'s Controllers adds
// more).
const controllerManagerControllers = "garbagecollector,namespace"

// readyTimeout bounds the readiness checks of kube-controller-manager and
// of a restarted kube-apiserver (Environment.StartAPIServer).
const readyTimeout = 90 * time.Second

// startTimeout bounds the start of etcd and of the API server, each, unless
// KUBEBUILDER_CONTROLPLANE_START_TIMEOUT is set.
const startTimeout = 90 * time.Second

// controllerManager is a running kube-controller-manager.
type controllerManager struct {
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error
}

func startControllerManager(ctx context.Context, e *Environment) (*controllerManager, error) {
	binary := filepath.Join(e.assets, controllerManagerBinary)
	dir := filepath.Join(e.root, "controller-manager")
	kubeconfigPath := filepath.Join(dir, "kubeconfig")
	if _, err := os.Stat(kubeconfigPath); err != nil {
		user, err := e.Envtest.AddUser(envtest.User{Name: "steady-testenv-controller-manager", Groups: []string{"system:masters"}}, nil)
		if err != nil {
			return nil, fmt.Errorf("testenv: adding the controller manager's user: %w", err)
		}
		kubeconfig, err := user.KubeConfig()
		if err != nil {
			return nil, fmt.Errorf("testenv: writing the controller manager's kubeconfig: %w", err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("testenv: %w", err)
		}
		if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
			return nil, fmt.Errorf("testenv: %w", err)
		}
	}
	k := &controllerManager{logPath: filepath.Join(dir, "output.log"), exited: make(chan struct{})}
	logFile, err := os.OpenFile(k.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	defer logFile.Close() // the child holds its own descriptor
	k.cmd = exec.Command(binary,
		"--kubeconfig="+kubeconfigPath,
		"--controllers="+strings.Join(append([]string{controllerManagerControllers}, e.opts.Controllers...), ","),
		"--leader-elect=false",
		"--secure-port=0",
	)
	k.cmd.Stdout, k.cmd.Stderr = logFile, logFile
	if os.Getenv("KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT") == "true" {
		k.cmd.Stdout, k.cmd.Stderr = io.MultiWriter(logFile, os.Stdout), io.MultiWriter(logFile, os.Stderr)
	}
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := k.cmd.Start(); err != nil {
		return nil, fmt.Errorf("testenv: starting %s: %w", binary, err)
	}
	go func() {
		k.waitErr = k.cmd.Wait()
		close(k.exited)
	}()
	if err := e.reaper.watch(k.cmd.Process.Pid); err != nil {
		return nil, errors.Join(fmt.Errorf("testenv: %w", err), k.stop())
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if err := k.checkReady(ctx, e.Client); err != nil {
		return nil, errors.Join(err, k.stop())
	}
	return k, nil
}

// restartControllerManager replaces the running controller manager, if
// any, by a new one that has passed its readiness check. e.mu is held.
func (e *Environment) restartControllerManager(ctx context.Context) error {
	if e.kcm == nil {
		return nil
	}
	err := e.kcm.stop()
	e.kcm = nil
	if err != nil {
		return err
	}
	e.kcm, err = startControllerManager(ctx, e) // nil on error
	return err
}

// checkReady proves that the two controllers work before any test relies on
// them: a child whose owner is deleted is collected, and a deleted namespace
// goes away.
func (k *controllerManager) checkReady(ctx context.Context, c client.Client) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "testenv-ready-"}}
	if err := c.Create(ctx, ns); err != nil {
		return fmt.Errorf("testenv: controller manager readiness check: %w", err)
	}
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "owner"}}
	if err := c.Create(ctx, owner); err != nil {
		return fmt.Errorf("testenv: controller manager readiness check: %w", err)
	}
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "child",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}
	if err := c.Create(ctx, child); err != nil {
		return fmt.Errorf("testenv: controller manager readiness check: %w", err)
	}
	if err := c.Delete(ctx, owner); err != nil {
		return fmt.Errorf("testenv: controller manager readiness check: %w", err)
	}
	if err := k.waitGone(ctx, c, child, "the garbage collector to delete a child whose owner was deleted"); err != nil {
		return err
	}
	if err := c.Delete(ctx, ns, client.PropagationPolicy(metav1.DeletePropagationBackground), &client.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		return fmt.Errorf("testenv: controller manager readiness check: %w", err)
	}
	return k.waitGone(ctx, c, ns, "the namespace controller to finish deleting a namespace")
}

func (k *controllerManager) waitGone(ctx context.Context, c client.Client, obj client.Object, what string) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-k.exited:
			return fmt.Errorf("testenv: kube-controller-manager exited (%v) while waiting for %s; its output ends:\n%s", k.waitErr, what, k.logTail())
		case <-ctx.Done():
			return fmt.Errorf("testenv: timed out after %s waiting for %s (last error: %v); kube-controller-manager's output ends:\n%s", readyTimeout, what, err, k.logTail())
		case <-tick.C:
		}
	}
}

func (k *controllerManager) logTail() string {
	data, _ := os.ReadFile(k.logPath)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// stop terminates the controller manager, killing it when it does not exit
// within ten seconds.
func (k *controllerManager) stop() error {
	select {
	case <-k.exited:
		return nil
	default:
	}
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.exited:
		return nil
	case <-time.After(10 * time.Second):
		_ = k.cmd.Process.Kill()
		<-k.exited
		return errors.New("testenv: kube-controller-manager did not stop within 10s of SIGTERM and was killed")
	}
}
