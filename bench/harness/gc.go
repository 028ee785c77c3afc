package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/steadyk8s/steady/testenv"
)

// StartGarbageCollector runs kube-controller-manager's garbage collector
// and namespace controller (and its deployment and replicaset controllers,
// idle but for the live children of MeasureLiveChildren) on env (started without
// testenv.WithControllerManager) with a client rate limit of qps requests a
// second (burst 2×qps). testenv's controller manager keeps the default, 20,
// at which collecting the 3,000 children of 1,000 Teams takes about 150
// seconds: the collector's rate limit, not the operator, would make the
// delete phase. It returns once the collector has deleted a child whose
// owner went; stop kills it.
func StartGarbageCollector(ctx context.Context, env *testenv.Environment, qps int) (stop func(), _ error) {
	assets, err := testenv.FindAssets(true)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "steady-bench-gc-")
	if err != nil {
		return nil, err
	}
	user, err := env.Envtest.AddUser(envtest.User{Name: "steady-bench-gc", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	kubeconfigPath := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "output.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(filepath.Join(assets, "kube-controller-manager"),
		"--kubeconfig="+kubeconfigPath,
		"--controllers=garbagecollector,namespace,deployment,replicaset", // the last two for the live children
		"--leader-elect=false",
		"--secure-port=0",
		"--kube-api-qps="+strconv.Itoa(qps),
		"--kube-api-burst="+strconv.Itoa(2*qps),
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group, killed with this process.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop = func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		_ = os.RemoveAll(dir)
	}
	if err := collects(ctx, env.Client, exited); err != nil {
		stop()
		return nil, fmt.Errorf("kube-controller-manager (log in %s): %w", logFile.Name(), err)
	}
	return stop, nil
}

// collects waits until the garbage collector deletes a child whose owner
// was deleted.
func collects(ctx context.Context, c client.Client, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-gc-ready-"}}
	if err := c.Create(ctx, ns); err != nil {
		return err
	}
	defer func() { _ = c.Delete(context.Background(), ns) }()
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "owner"}}
	if err := c.Create(ctx, owner); err != nil {
		return err
	}
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "child",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}
	if err := c.Create(ctx, child); err != nil {
		return err
	}
	if err := c.Delete(ctx, owner); err != nil {
		return err
	}
	for {
		err := c.Get(ctx, client.ObjectKeyFromObject(child), &corev1.ConfigMap{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-exited:
			return errors.New("exited")
		case <-ctx.Done():
			return fmt.Errorf("the garbage collector did not delete a child whose owner was deleted: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
