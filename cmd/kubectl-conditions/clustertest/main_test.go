package clustertest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/steadyk8s/steady/cmd/kubectl-conditions/check"
	"github.com/steadyk8s/steady/testenv"
)

var env = testenv.New(testenv.WithCRDs{Paths: []string{"testdata/crds"}})

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

var (
	widgets     = schema.GroupVersionResource{Group: "test.steady.dev", Version: "v1", Resource: "widgets"}
	gadgets     = schema.GroupVersionResource{Group: "test.steady.dev", Version: "v1", Resource: "gadgets"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	configmaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

func client(t *testing.T) dynamic.Interface {
	t.Helper()
	env.Require(t)
	return dynamic.NewForConfigOrDie(env.Config)
}

// cond is one status condition.
func cond(typ, status, reason, message string, observedGeneration int64) map[string]any {
	c := map[string]any{"type": typ, "status": status, "reason": reason, "message": message,
		"lastTransitionTime": "2026-01-01T00:00:00Z"}
	if observedGeneration > 0 {
		c["observedGeneration"] = observedGeneration
	}
	return c
}

// create creates an object of gvr from obj (metadata.name, namespace and
// labels set from the arguments) and then, when status is set, writes its
// status through the status subresource, as a controller would.
func create(t *testing.T, gvr schema.GroupVersionResource, ns, name string, labels map[string]string, obj, status map[string]any) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	if u.Object == nil {
		u.Object = map[string]any{"apiVersion": gvr.GroupVersion().String(), "spec": map[string]any{"size": int64(1)}}
		u.SetKind(map[string]string{"widgets": "Widget", "gadgets": "Gadget"}[gvr.Resource])
	}
	u.SetName(name)
	u.SetNamespace(ns)
	u.SetLabels(labels)
	ri := client(t).Resource(gvr).Namespace(ns)
	created, err := ri.Create(context.Background(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	if status == nil {
		return created
	}
	created.Object["status"] = status
	updated, err := ri.UpdateStatus(context.Background(), created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("writing the status of %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	return updated
}

func conditions(c ...map[string]any) map[string]any {
	list := make([]any, len(c))
	for i := range c {
		list[i] = c[i]
	}
	return map[string]any{"conditions": list}
}

// fixture makes a namespace with healthy and broken objects, all labelled
// suite=<namespace>, and a broken cluster-scoped Gadget with the same label:
//
//	Widget good        Ready True for its generation          healthy
//	Widget quiet       no status                              healthy (kstatus Current)
//	Widget not-ready   Ready False Waiting                    unhealthy
//	Widget unknown     Available Unknown                      unhealthy
//	Widget stalled     Ready True, Stalled True               unhealthy
//	Widget degraded    Degraded True                          unhealthy
//	Widget lagging     observed generation 1 of 2             unhealthy (two rows)
//	Widget deleting    held by a finalizer                    unhealthy (kstatus Terminating)
//	Deployment web     no controller runs in envtest          unhealthy (kstatus InProgress)
//	ConfigMap settings                                        healthy
//	Gadget <ns>        Ready False Broken (cluster-scoped)    unhealthy
func fixture(t *testing.T) (ns string, labels map[string]string) {
	t.Helper()
	ns = env.Namespace(t)
	labels = map[string]string{"suite": ns}
	create(t, widgets, ns, "good", labels, nil, map[string]any{"observedGeneration": int64(1),
		"conditions": []any{cond("Ready", "True", "Succeeded", "", 1)}})
	create(t, widgets, ns, "quiet", labels, nil, nil)
	create(t, widgets, ns, "not-ready", labels, nil, conditions(cond("Ready", "False", "Waiting", "waiting for the bucket", 0)))
	create(t, widgets, ns, "unknown", labels, nil, conditions(cond("Available", "Unknown", "Probing", "", 0)))
	create(t, widgets, ns, "stalled", labels, nil, conditions(cond("Ready", "True", "Done", "", 0), cond("Stalled", "True", "BadSpec", "spec.size must be positive", 0)))
	create(t, widgets, ns, "degraded", labels, nil, conditions(cond("Degraded", "True", "OneReplica", "", 0)))

	lagging := create(t, widgets, ns, "lagging", labels, nil, nil)
	lagging.Object["spec"] = map[string]any{"size": int64(2)} // generation 2
	lagging, err := client(t).Resource(widgets).Namespace(ns).Update(context.Background(), lagging, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lagging.Object["status"] = map[string]any{"observedGeneration": int64(1), "conditions": []any{cond("Ready", "True", "Done", "", 1)}}
	if _, err := client(t).Resource(widgets).Namespace(ns).UpdateStatus(context.Background(), lagging, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	deleting := create(t, widgets, ns, "deleting", labels, nil, conditions(cond("Ready", "True", "Done", "", 0)))
	deleting.SetFinalizers([]string{"test.steady.dev/hold"})
	if _, err := client(t).Resource(widgets).Namespace(ns).Update(context.Background(), deleting, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client(t).Resource(widgets).Namespace(ns).Delete(context.Background(), "deleting", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		_, _ = dynamic.NewForConfigOrDie(env.Config).Resource(widgets).Namespace(ns).Patch(context.Background(), "deleting", "application/merge-patch+json", patch, metav1.PatchOptions{})
	})

	create(t, deployments, ns, "web", labels, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{
		"replicas": int64(1),
		"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx"}}},
		},
	}}, nil)
	create(t, configmaps, ns, "settings", labels, map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}, nil)

	create(t, gadgets, "", ns, labels, nil, conditions(cond("Ready", "False", "Broken", "the gadget is broken", 0)))
	t.Cleanup(func() {
		_ = dynamic.NewForConfigOrDie(env.Config).Resource(gadgets).Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	return ns, labels
}

var (
	adminOnce   sync.Once
	adminConfig []byte
	adminErr    error
)

// kubeconfig writes a kubeconfig with two contexts: "envtest", an admin of
// the control plane in namespace ns (none when empty), and "unreachable", a
// server nothing listens on; current is the current context.
func kubeconfig(t *testing.T, ns, current string) string {
	t.Helper()
	env.Require(t)
	adminOnce.Do(func() {
		var user *envtest.AuthenticatedUser
		user, adminErr = env.Envtest.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
		if adminErr == nil {
			adminConfig, adminErr = user.KubeConfig()
		}
	})
	if adminErr != nil {
		t.Fatal(adminErr)
	}
	cfg, err := clientcmd.Load(adminConfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts["envtest"].Namespace = ns
	cfg.Clusters["unreachable"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.Contexts["unreachable"] = &clientcmdapi.Context{Cluster: "unreachable", AuthInfo: cfg.Contexts["envtest"].AuthInfo}
	cfg.CurrentContext = current
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// run runs kubectl-conditions.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = check.Run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// tableRow is a row of the table: KIND, NAMESPACE/NAME, CONDITION, STATUS,
// REASON, MESSAGE (AGE left out).
type tableRow [6]string

var columns = regexp.MustCompile(`\S+(?: \S+)*`)

// parseTable reads the rows of the table (columns are three or more spaces
// apart; a cell has single spaces at most).
func parseTable(t *testing.T, out string) []tableRow {
	t.Helper()
	lines := strings.Split(out, "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "KIND ") {
		return nil
	}
	var rows []tableRow
	for _, l := range lines[1:] {
		if l == "" {
			break
		}
		cells := columns.FindAllString(l, -1)
		if len(cells) != 7 {
			t.Fatalf("row %q has %d cells, want 7", l, len(cells))
		}
		rows = append(rows, tableRow{cells[0], cells[1], cells[2], cells[3], cells[4], cells[6]})
	}
	return rows
}

// wantRows checks that got holds exactly want, in order.
func wantRows(t *testing.T, out string, want ...tableRow) {
	t.Helper()
	got := parseTable(t, out)
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d:\n%s", len(got), len(want), out)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d:\n got %q\nwant %q\n%s", i, got[i], want[i], out)
		}
	}
}

// brokenWidgetsRows are the rows of the fixture's broken Widgets in ns.
func brokenWidgetsRows(ns string) []tableRow {
	return []tableRow{
		{"Widget", ns + "/degraded", "Degraded", "True", "OneReplica", "-"},
		{"Widget", ns + "/deleting", "kstatus", "Terminating", "Terminating", "Resource scheduled for deletion"},
		{"Widget", ns + "/lagging", "Ready", "True", "Done", "observedGeneration 1 lags generation 2"},
		{"Widget", ns + "/lagging", "status.observedGeneration", "1", "LatestGenerationNotObserved", "generation is 2, but the latest observed generation is 1"},
		{"Widget", ns + "/not-ready", "Ready", "False", "Waiting", "waiting for the bucket"},
		{"Widget", ns + "/stalled", "Stalled", "True", "BadSpec", "spec.size must be positive"},
		{"Widget", ns + "/unknown", "Available", "Unknown", "Probing", "-"},
	}
}
