package soak

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/steadyk8s/steady/examples/bucket"
)

// replicaEnv is the environment variable that makes a soak binary run one
// replica of the operators instead of its tests or its main: its value is
// the replica's [replicaConfig], as JSON.
const replicaEnv = "STEADY_SOAK_REPLICA"

// Exit codes of a replica process.
const (
	exitStopped   = 0 // stopped by SIGTERM, cleanly
	exitFailed    = 1
	exitLeaseLost = 3 // could not renew its lease: restart it, as the kubelet would
)

// The lines a replica writes on its standard output, one word first.
const (
	lineCache   = "cache"   // "cache http://127.0.0.1:port": its cache, for [remoteCache]
	lineElected = "elected" // it became the leader
	lineStarted = "started" // its start-up writes (the tenants' ClusterRoles) are done
)

// replicaConfig is what a replica process is told.
type replicaConfig struct {
	N int
	// Host, QPS and Burst reach the API server through the soak's proxy
	// for this replica (its faults, watch delay and request counter).
	Host                                      string
	QPS                                       float32
	Burst                                     int
	S3                                        bucket.S3Config
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// RunReplicaIfAsked runs one replica of the soak's operators and exits
// when the process was started as one by [Run]; otherwise it returns at
// once. Call it first in TestMain and in main, before anything else starts:
// Run starts each replica as a new process of its own binary.
func RunReplicaIfAsked() {
	v, ok := os.LookupEnv(replicaEnv)
	if !ok {
		return
	}
	var cfg replicaConfig
	if err := json.Unmarshal([]byte(v), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "soak replica: %s: %v\n", replicaEnv, err)
		os.Exit(exitFailed)
	}
	os.Exit(runReplica(cfg))
}

// runReplica runs the replica until SIGTERM (exitStopped), a lost lease
// (exitLeaseLost) or a failure (exitFailed).
func runReplica(cfg replicaConfig) int {
	ctrl.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "soak replica %d: %s\n", cfg.N, fmt.Sprintf(format, args...))
		return exitFailed
	}
	scheme, err := Scheme()
	if err != nil {
		return fail("%v", err)
	}
	mgr, err := ctrl.NewManager(&rest.Config{Host: cfg.Host, QPS: cfg.QPS, Burst: cfg.Burst}, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		// Three workers on the rate-limited queue: v0.24's priority
		// queue can hang a stop (docs/compatibility.md).
		Controller:              config.Controller{MaxConcurrentReconciles: 3, UsePriorityQueue: ptr.To(false)},
		LeaderElection:          true,
		LeaderElectionID:        LeaseName,
		LeaderElectionNamespace: Namespace,
		LeaseDuration:           ptr.To(cfg.LeaseDuration),
		RenewDeadline:           ptr.To(cfg.RenewDeadline),
		RetryPeriod:             ptr.To(cfg.RetryPeriod),
		// A process killed with SIGKILL releases nothing; one stopped with
		// SIGTERM at the end of the run need not either.
		LeaderElectionReleaseOnCancel: false,
	})
	if err != nil {
		return fail("creating the manager: %v", err)
	}
	started, err := setup(mgr, cfg.S3)
	if err != nil {
		return fail("setting up the operators: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail("%v", err)
	}
	go func() { _ = http.Serve(ln, cacheHandler(mgr.GetCache(), scheme)) }()
	out := bufio.NewWriter(os.Stdout)
	var outMu sync.Mutex // lines are said from more than one goroutine
	say := func(line string) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintln(out, line)
		_ = out.Flush()
	}
	say(lineCache + " http://" + ln.Addr().String())

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	// Gone with the soak, should it die first (killed, or a test binary
	// that timed out): its child is then handed to another parent.
	go func(parent int) {
		for range time.Tick(time.Second) {
			if os.Getppid() != parent {
				fmt.Fprintf(os.Stderr, "soak replica %d: the soak is gone\n", cfg.N)
				os.Exit(exitFailed)
			}
		}
	}(os.Getppid())
	go func() {
		select {
		case <-mgr.Elected():
			say(lineElected)
		case <-ctx.Done():
		}
	}()
	go func() {
		select {
		case <-started:
			say(lineStarted)
		case <-ctx.Done():
		}
	}()
	err = mgr.Start(ctx)
	switch {
	case err == nil:
		return exitStopped
	case strings.Contains(err.Error(), "leader election lost"):
		fmt.Fprintf(os.Stderr, "soak replica %d: %v\n", cfg.N, err)
		return exitLeaseLost
	default:
		return fail("the manager stopped: %v", err)
	}
}

// cacheHandler serves what the replica's cache holds to [remoteCache]:
// GET /list?apiVersion=...&kind=...List is the list of that kind, as JSON.
func cacheHandler(cache client.Reader, scheme *k8sruntime.Scheme) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gvk := schema.FromAPIVersionAndKind(r.URL.Query().Get("apiVersion"), r.URL.Query().Get("kind"))
		obj, err := scheme.New(gvk)
		list, ok := obj.(client.ObjectList)
		if err != nil || !ok {
			http.Error(w, fmt.Sprintf("no list type %s (%v)", gvk, err), http.StatusBadRequest)
			return
		}
		if err := cache.List(r.Context(), list); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_ = json.NewEncoder(w).Encode(list)
	})
}

// remoteCache reads a replica process's cache through its cacheHandler:
// only List, which is what [state.cacheLag] asks.
type remoteCache struct {
	url    string
	scheme *k8sruntime.Scheme
}

var _ client.Reader = remoteCache{}

// Get implements client.Reader; the soak never asks it.
func (c remoteCache) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("soak: a replica's cache is only listed")
}

// List implements client.Reader; options are not supported.
func (c remoteCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if len(opts) > 0 {
		return errors.New("soak: a replica's cache is listed without options")
	}
	gvk, err := apiutil.GVKForObject(list, c.scheme)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/list?apiVersion=%s&kind=%s", c.url, gvk.GroupVersion(), gvk.Kind), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var b strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
		return fmt.Errorf("soak: listing %s in the replica's cache: %s: %s", gvk.Kind, resp.Status, strings.TrimSpace(b.String()))
	}
	// Into an empty list: encoding/json decodes each item into the slice
	// element already there, so a field the answer omits would keep what
	// a list given with items (a copy of the live list, say) held.
	reflect.ValueOf(list).Elem().SetZero()
	return json.NewDecoder(resp.Body).Decode(list)
}
