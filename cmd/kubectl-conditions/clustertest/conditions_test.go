package clustertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/steadyk8s/steady/cmd/kubectl-conditions/check"
)

// TestScanNamespace: the broken objects of one namespace, by kind, in the
// table, JSON and YAML, with the exit codes.
func TestScanNamespace(t *testing.T) {
	ns, _ := fixture(t)
	kc := kubeconfig(t, "", "envtest")

	t.Run("table", func(t *testing.T) {
		code, out, errOut := run(t, "--kubeconfig", kc, "-n", ns, "--kind", "widgets,deployments")
		if code != check.ExitUnhealthy || errOut != "" {
			t.Errorf("exit %d, stderr %q; want 1 and nothing", code, errOut)
		}
		want := append([]tableRow{{"Deployment", ns + "/web", "kstatus", "InProgress", "LessReplicas", "Replicas: 0/1"}}, brokenWidgetsRows(ns)...)
		wantRows(t, out, want...)
		if !strings.HasSuffix(out, "\n7 unhealthy, 2 healthy objects in 2 resource types.\n") {
			t.Errorf("summary:\n%s", out)
		}
	})

	t.Run("--all lists the healthy objects", func(t *testing.T) {
		code, out, _ := run(t, "--kubeconfig", kc, "-n", ns, "--kind", "wd", "--all")
		if code != check.ExitUnhealthy {
			t.Errorf("exit %d, want 1", code)
		}
		rows := brokenWidgetsRows(ns)
		want := append(rows[:2:2], tableRow{"Widget", ns + "/good", "Ready", "True", "Succeeded", "-"})
		want = append(want, rows[2:5]...)
		want = append(want, tableRow{"Widget", ns + "/quiet", "kstatus", "Current", "-", "Resource is current"})
		want = append(want, rows[5:]...)
		wantRows(t, out, want...)
	})

	t.Run("every way to name a kind", func(t *testing.T) {
		for _, kind := range []string{"Widget", "widget", "widgets", "wd", "widgets.test.steady.dev", "Widget.test.steady.dev"} {
			code, out, errOut := run(t, "--kubeconfig", kc, "-n", ns, "--kind", kind)
			if code != check.ExitUnhealthy || len(parseTable(t, out)) != len(brokenWidgetsRows(ns)) {
				t.Errorf("--kind %s: exit %d, stderr %q:\n%s", kind, code, errOut, out)
			}
		}
	})

	for format, unmarshal := range map[string]func([]byte, any) error{
		"json": json.Unmarshal,
		"yaml": func(data []byte, v any) error { return yaml.UnmarshalStrict(data, v) },
	} {
		t.Run(format, func(t *testing.T) {
			code, out, _ := run(t, "--kubeconfig", kc, "-n", ns, "--kind", "Widget", "-o", format)
			if code != check.ExitUnhealthy {
				t.Errorf("exit %d, want 1", code)
			}
			var r check.Report
			if err := unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			checkReport(t, &r, ns)
		})
	}

	t.Run("exit 0 when all is healthy", func(t *testing.T) {
		code, out, _ := run(t, "--kubeconfig", kc, "-n", ns, "--kind", "configmaps")
		if code != check.ExitHealthy || !strings.HasPrefix(out, "No unhealthy objects: ") {
			t.Errorf("exit %d, want 0:\n%s", code, out)
		}
		code, out, _ = run(t, "--kubeconfig", kc, "-n", ns, "--kind", "widgets", "-l", "suite="+ns+",nothing=here")
		if code != check.ExitHealthy || out != "No unhealthy objects: 0 healthy in 1 resource type.\n" {
			t.Errorf("nothing selected: exit %d, want 0:\n%s", code, out)
		}
	})
}

// checkReport checks the machine output of the fixture's Widgets.
func checkReport(t *testing.T, r *check.Report, ns string) {
	t.Helper()
	if r.Unhealthy != 6 || r.Healthy != 2 || r.ResourceTypes != 1 || len(r.Objects) != 6 || len(r.Warnings) != 0 {
		t.Fatalf("report %+v, want 6 unhealthy, 2 healthy, 1 type", r)
	}
	o := r.Objects[3]
	if o.APIVersion != "test.steady.dev/v1" || o.Kind != "Widget" || o.Resource != "widgets.test.steady.dev" ||
		o.Namespace != ns || o.Name != "not-ready" || o.Healthy || len(o.Findings) != 1 {
		t.Fatalf("object 3: %+v, want Widget %s/not-ready", o, ns)
	}
	f := o.Findings[0]
	want := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if f.Condition != "Ready" || f.Status != "False" || f.Reason != "Waiting" || f.Message != "waiting for the bucket" ||
		f.Rule != check.RuleNotTrue || f.Since == nil || !f.Since.Equal(want) {
		t.Errorf("finding %+v", f)
	}
}

// TestNamespaces: -n, -A, -l and the kubeconfig's namespace select the
// objects; cluster-scoped types are scanned unless -n is given.
func TestNamespaces(t *testing.T) {
	ns, labels := fixture(t)
	other := env.Namespace(t)
	create(t, widgets, other, "elsewhere", map[string]string{"suite": ns, "pick": "me"}, nil, conditions(cond("Ready", "False", "Far", "", 0)))
	elsewhere := tableRow{"Widget", other + "/elsewhere", "Ready", "False", "Far", "-"}
	gadget := tableRow{"Gadget", ns, "Ready", "False", "Broken", "the gadget is broken"}
	web := tableRow{"Deployment", ns + "/web", "kstatus", "InProgress", "LessReplicas", "Replicas: 0/1"}
	suite := "suite=" + labels["suite"]

	t.Run("-A -l", func(t *testing.T) {
		kc := kubeconfig(t, "", "envtest")
		code, out, _ := run(t, "--kubeconfig", kc, "-A", "-l", "pick=me", "--kind", "widgets")
		if code != check.ExitUnhealthy {
			t.Errorf("exit %d, want 1", code)
		}
		wantRows(t, out, elsewhere)
	})

	t.Run("the kubeconfig's namespace, every type, cluster-scoped ones too", func(t *testing.T) {
		kc := kubeconfig(t, ns, "envtest")
		code, out, errOut := run(t, "--kubeconfig", kc, "-l", suite)
		if code != check.ExitUnhealthy || errOut != "" {
			t.Errorf("exit %d, stderr %q; want 1 and nothing", code, errOut)
		}
		want := append([]tableRow{web, gadget}, brokenWidgetsRows(ns)...)
		wantRows(t, out, want...)
	})

	t.Run("an explicit -n leaves cluster-scoped types out", func(t *testing.T) {
		kc := kubeconfig(t, ns, "envtest")
		code, out, _ := run(t, "--kubeconfig", kc, "-n", other, "-l", suite)
		if code != check.ExitUnhealthy {
			t.Errorf("exit %d, want 1", code)
		}
		wantRows(t, out, elsewhere)
		// Unless --kind names one.
		_, out, _ = run(t, "--kubeconfig", kc, "-n", other, "-l", suite, "--kind", "widgets,gadgets")
		wantRows(t, out, gadget, elsewhere)
	})

	t.Run("-A, every type", func(t *testing.T) {
		kc := kubeconfig(t, "", "envtest")
		code, out, _ := run(t, "--kubeconfig", kc, "-A", "-l", suite)
		if code != check.ExitUnhealthy {
			t.Errorf("exit %d, want 1", code)
		}
		want := append([]tableRow{web, gadget}, brokenWidgetsRows(ns)...)
		if other < ns {
			want = append([]tableRow{web, gadget, elsewhere}, brokenWidgetsRows(ns)...)
		} else {
			want = append(want, elsewhere)
		}
		wantRows(t, out, want...)
	})
}

// TestKubeconfigAndContext: KUBECONFIG and --context are honoured; a server
// that cannot be reached is exit 2.
func TestKubeconfigAndContext(t *testing.T) {
	ns, labels := fixture(t)
	kc := kubeconfig(t, ns, "unreachable")
	t.Setenv("KUBECONFIG", kc)

	code, out, errOut := run(t, "-l", "suite="+labels["suite"], "--kind", "widgets")
	if code != check.ExitError || out != "" || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("unreachable: exit %d, stdout %q, stderr %q; want 2 and the error", code, out, errOut)
	}
	code, out, errOut = run(t, "--context", "envtest", "-l", "suite="+labels["suite"], "--kind", "widgets")
	if code != check.ExitUnhealthy || errOut != "" {
		t.Errorf("--context envtest: exit %d, stderr %q; want 1", code, errOut)
	}
	wantRows(t, out, brokenWidgetsRows(ns)...)

	code, _, errOut = run(t, "--context", "no-such-context")
	if code != check.ExitError || !strings.Contains(errOut, "no-such-context") {
		t.Errorf("unknown context: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = run(t, "--context", "envtest", "--kind", "widgets,sprockets")
	if code != check.ExitError || !strings.Contains(errOut, `"sprockets"`) {
		t.Errorf("unknown kind: exit %d, stderr %q", code, errOut)
	}
}

// TestForbiddenTypeIsAWarning: a type this user may not list is a warning
// on stderr; the exit status is the health of what could be listed, and 2
// only when nothing could be.
func TestForbiddenTypeIsAWarning(t *testing.T) {
	ns, labels := fixture(t)
	user := "widget-reader-" + ns
	c := client(t)
	role := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": user},
		"rules": []any{map[string]any{"apiGroups": []any{"test.steady.dev"}, "resources": []any{"widgets"}, "verbs": []any{"list"}}},
	}}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": user},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
		"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}},
	}}
	for _, o := range []*unstructured.Unstructured{role, binding} {
		gvr := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: strings.ToLower(o.GetKind()) + "s"}
		if _, err := c.Resource(gvr).Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Resource(gvr).Delete(context.Background(), o.GetName(), metav1.DeleteOptions{}) })
	}
	kc := kubeconfig(t, ns, "envtest")
	suite := "suite=" + labels["suite"]

	code, out, errOut := run(t, "--kubeconfig", kc, "--as", user, "--kind", "widgets,secrets", "-l", suite)
	if code != check.ExitUnhealthy {
		t.Errorf("exit %d, want 1", code)
	}
	wantRows(t, out, brokenWidgetsRows(ns)...)
	wantWarning := "Warning: listing secrets in namespace " + ns + `: secrets is forbidden: User "` + user + `" cannot list resource "secrets"`
	if !strings.Contains(errOut, wantWarning) || strings.Contains(errOut, "error:") {
		t.Errorf("stderr %q, want the warning %q and no error", errOut, wantWarning)
	}

	code, out, errOut = run(t, "--kubeconfig", kc, "--as", user, "-l", suite)
	if code != check.ExitUnhealthy || strings.Contains(errOut, "error:") || strings.Count(errOut, "is forbidden") < 10 {
		t.Errorf("every type: exit %d, stderr %q; want 1 and a warning per forbidden type", code, errOut)
	}
	wantRows(t, out, brokenWidgetsRows(ns)...)

	code, _, errOut = run(t, "--kubeconfig", kc, "--as", user, "--kind", "secrets,configmaps")
	if code != check.ExitError || !strings.Contains(errOut, "error: none of the 2 resource types could be listed") {
		t.Errorf("nothing listable: exit %d, stderr %q; want 2", code, errOut)
	}
}

// TestProgress: --progress reports each type on stderr when it is not a
// terminal; without it nothing.
func TestProgress(t *testing.T) {
	ns, labels := fixture(t)
	kc := kubeconfig(t, ns, "envtest")
	_, _, errOut := run(t, "--kubeconfig", kc, "-l", "suite="+labels["suite"], "--progress")
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	var done, total int
	if _, err := fmt.Sscanf(lines[len(lines)-1], "scanned %d/%d ", &done, &total); err != nil || done != total || total != len(lines) || total < 20 {
		t.Errorf("stderr %q, want a line per type, %d of %d", errOut, done, total)
	}
	if !strings.HasPrefix(lines[0], "scanned 1/") || !strings.Contains(errOut, "(widgets.test.steady.dev)\n") {
		t.Errorf("stderr %q, want a line per type", errOut)
	}
	_, _, errOut = run(t, "--kubeconfig", kc, "-l", "suite="+labels["suite"])
	if errOut != "" {
		t.Errorf("stderr %q without --progress", errOut)
	}
}

// TestWatch: --watch scans again until interrupted and exits with the
// status of the last scan.
func TestWatch(t *testing.T) {
	ns, labels := fixture(t)
	kc := kubeconfig(t, ns, "envtest")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &stopAfter{n: 3, cancel: cancel}
	code := check.Run(ctx, []string{"--kubeconfig", kc, "-l", "suite=" + labels["suite"], "--kind", "widgets", "--watch", "--interval", "20ms"}, w, w)
	if code != check.ExitUnhealthy {
		t.Errorf("exit %d, want 1", code)
	}
	out := w.String()
	if n := strings.Count(out, "Every 20ms: "); n < 3 {
		t.Errorf("%d scans, want 3:\n%s", n, out)
	}
	if n := len(regexp.MustCompile(`\nWidget +`+ns+`/not-ready `).FindAllString(out, -1)); n < 3 {
		t.Errorf("not-ready listed %d times, want 3:\n%s", n, out)
	}

	// The machine outputs are a stream of documents.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	w = &stopAfter{n: 2, cancel: cancel}
	check.Run(ctx, []string{"--kubeconfig", kc, "-l", "suite=" + labels["suite"], "--kind", "widgets", "-w", "--interval", "20ms", "-o", "json"}, w, w)
	dec := json.NewDecoder(strings.NewReader(w.String()))
	for i := range 2 {
		var r check.Report
		if err := dec.Decode(&r); err != nil || r.Unhealthy != 6 {
			t.Fatalf("document %d: %v, %+v", i, err, r)
		}
	}
}

// stopAfter collects the output and cancels after n reports (summary
// lines, or JSON documents).
type stopAfter struct {
	mu     sync.Mutex
	buf    strings.Builder
	n      int
	cancel context.CancelFunc
}

func (s *stopAfter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	out := s.buf.String()
	if strings.Count(out, " healthy objects in ")+strings.Count(out, "\n}\n") >= s.n {
		s.cancel()
	}
	return len(p), nil
}

func (s *stopAfter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// TestUnavailableAggregatedAPIIsAWarning: an APIService whose server is
// missing makes its group fail discovery: a warning; the APIService itself
// is reported unhealthy (Available False).
func TestUnavailableAggregatedAPIIsAWarning(t *testing.T) {
	ns, labels := fixture(t)
	c := client(t)
	apiservices := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	name := "v1." + ns + ".test.steady.dev"
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"suite": labels["suite"]}},
		"spec": map[string]any{
			"group": ns + ".test.steady.dev", "version": "v1", "groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
			"insecureSkipTLSVerify": true, "service": map[string]any{"namespace": ns, "name": "nothing-here"},
		},
	}}
	if _, err := c.Resource(apiservices).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Resource(apiservices).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	kc := kubeconfig(t, ns, "envtest")

	// The API server notices the service is missing shortly after.
	var code int
	var out, errOut string
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, out, errOut = run(t, "--kubeconfig", kc, "-l", "suite="+labels["suite"], "--kind", "apiservices,widgets")
		if strings.Contains(errOut, ns+".test.steady.dev/v1") && strings.Contains(out, "Available") || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code != check.ExitUnhealthy || strings.Contains(errOut, "error:") {
		t.Errorf("exit %d, stderr %q; want 1 and no error", code, errOut)
	}
	if !strings.Contains(errOut, "Warning: discovering "+ns+".test.steady.dev/v1: ") {
		t.Errorf("stderr %q, want a warning about the group", errOut)
	}
	rows := parseTable(t, out)
	if len(rows) == 0 || rows[0][0] != "APIService" || rows[0][1] != name || rows[0][2] != "Available" || rows[0][3] != "False" {
		t.Errorf("want the APIService Available False first:\n%s", out)
	}
}

// failing answers the list requests of the resources named in status with
// that HTTP status, as an aggregated API whose server is down (503) or a
// broken one (500) would.
type failing struct {
	next   http.RoundTripper
	status map[string]int // by the last element of the path
}

func (f *failing) RoundTrip(r *http.Request) (*http.Response, error) {
	if code, ok := f.status[path.Base(r.URL.Path)]; ok && r.Method == http.MethodGet {
		body := fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"%s is failing","reason":%q,"code":%d}`,
			path.Base(r.URL.Path), map[int]string{503: "ServiceUnavailable", 500: "InternalError"}[code], code)
		return &http.Response{StatusCode: code, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	}
	return f.next.RoundTrip(r)
}

// TestScannerListFailures: a type whose list fails with 503 is a warning; a
// 500 is an error (the report is incomplete), returned with the report of
// the rest.
func TestScannerListFailures(t *testing.T) {
	ns, labels := fixture(t)
	cfg := rest.CopyConfig(env.Config)
	status := map[string]int{"gadgets": http.StatusServiceUnavailable}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return &failing{next: rt, status: status} }
	s := &check.Scanner{Config: cfg}
	q := check.Query{Kinds: []string{"widgets", "gadgets"}, Namespace: ns, Selector: "suite=" + labels["suite"]}

	r, err := s.Scan(context.Background(), q)
	if err != nil {
		t.Fatalf("503: %v, want only a warning", err)
	}
	if r.Unhealthy != 6 || r.ResourceTypes != 1 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "listing gadgets.test.steady.dev: gadgets is failing") {
		t.Errorf("503: report %+v, want the widgets and a warning about gadgets", r)
	}

	status["gadgets"] = http.StatusInternalServerError
	r, err = s.Scan(context.Background(), q)
	var le *check.ListError
	if !errors.As(err, &le) || le.Resource != "gadgets.test.steady.dev" || !apierrors.IsInternalError(err) {
		t.Errorf("500: error %v, want a ListError for gadgets", err)
	}
	if r == nil || r.Unhealthy != 6 || len(r.Warnings) != 0 {
		t.Errorf("500: report %+v, want the widgets", r)
	}
}
