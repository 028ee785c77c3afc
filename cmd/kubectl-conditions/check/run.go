package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// Exit codes of [Run].
const (
	// ExitHealthy: every object scanned is healthy.
	ExitHealthy = 0
	// ExitUnhealthy: at least one object is unhealthy.
	ExitUnhealthy = 1
	// ExitError: a usage error, or the API server could not be reached or
	// read (see [Scanner.Scan] for what is only a warning).
	ExitError = 2
)

// progressThreshold is how many resource types a scan must have for its
// progress to be shown on a terminal without --progress.
const progressThreshold = 10

const usage = `kubectl-conditions lists the objects whose conditions say they are unhealthy.

Usage:
  kubectl conditions [flags]

Unhealthy: a Ready or Available condition False or Unknown; a Stalled or
Degraded condition True; status.observedGeneration or a condition's
observedGeneration older than metadata.generation; kstatus InProgress, Failed
or Terminating. Healthy objects are counted; --all lists them too.

Every served resource type that can be listed is scanned (preferred versions,
events left out) unless --kind names some. Namespaced types are read in the
namespace of the kubeconfig's context, or -n, or all namespaces with -A;
cluster-scoped types are read too, except with an explicit -n (name them with
--kind then).

Exit status: 0 all healthy, 1 something unhealthy, 2 usage or connection
error. A type this user may not list, or an aggregated API that is down, is a
warning on stderr, not an error.

Examples:
  kubectl conditions -A
  kubectl conditions --kind deployments,Tenant -n shop -o yaml
  kubectl conditions -A -l app.kubernetes.io/part-of=shop --watch

Flags:
`

// usageError is a command line that cannot run.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// options are the parsed command line.
type options struct {
	// config reads the kubeconfig (KUBECONFIG, --kubeconfig) with kubectl's
	// overrides (--context, -n, --as, --server, ...).
	config        clientcmd.ClientConfig
	kinds         []string
	selector      string
	allNamespaces bool
	all           bool
	output        string
	watch         bool
	interval      time.Duration
	progress      bool
	help          bool
	flags         *pflag.FlagSet
}

func parseArgs(args []string) (*options, error) {
	o := &options{}
	fs := pflag.NewFlagSet("kubectl-conditions", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringSliceVar(&o.kinds, "kind", nil, "Resource types to scan, by kind or resource name, comma-separated (deployments,Tenant,certificates.cert-manager.io); default: every type")
	fs.StringVarP(&o.selector, "selector", "l", "", "Label selector to filter objects on (-l app=shop,tier!=cache)")
	fs.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "Scan namespaced types in every namespace")
	fs.BoolVar(&o.all, "all", false, "List healthy objects too (they are always counted)")
	fs.StringVarP(&o.output, "output", "o", "", "Output format: json or yaml (default: a table)")
	fs.BoolVarP(&o.watch, "watch", "w", false, "Scan again every --interval until interrupted")
	fs.DurationVar(&o.interval, "interval", 10*time.Second, "Time between scans with --watch")
	fs.BoolVar(&o.progress, "progress", false, "Show progress on stderr even when it is not a terminal")
	fs.BoolVarP(&o.help, "help", "h", false, "Show this help")
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	fs.StringVar(&rules.ExplicitPath, clientcmd.RecommendedConfigPathFlag, "", "Path to the kubeconfig file to use (default: $KUBECONFIG, else ~/.kube/config)")
	overrides := &clientcmd.ConfigOverrides{}
	clientcmd.BindOverrideFlags(overrides, fs, clientcmd.RecommendedConfigOverrideFlags(""))
	o.config = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	o.flags = fs
	if err := fs.Parse(args); err != nil {
		return o, &usageError{err}
	}
	if fs.NArg() > 0 {
		return o, &usageError{fmt.Errorf("unexpected arguments %q: name resource types with --kind", fs.Args())}
	}
	switch o.output {
	case "", "json", "yaml":
	default:
		return o, &usageError{fmt.Errorf("unknown output format %q: use json or yaml, or no -o for a table", o.output)}
	}
	if _, err := labels.Parse(o.selector); err != nil {
		return o, &usageError{fmt.Errorf("invalid selector %q: %w", o.selector, err)}
	}
	if o.watch && o.interval <= 0 {
		return o, &usageError{fmt.Errorf("--interval must be positive, not %s", o.interval)}
	}
	for _, k := range o.kinds {
		if strings.TrimSpace(k) == "" {
			return o, &usageError{errors.New("--kind has an empty entry")}
		}
	}
	return o, nil
}

// Run is kubectl-conditions with its command-line arguments (without the
// program name): it scans, prints to stdout, warns and reports progress on
// stderr and returns the exit status ([ExitHealthy], [ExitUnhealthy],
// [ExitError]). With --watch it scans until ctx ends and returns the status
// of the last scan.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseArgs(args)
	if o != nil && o.help {
		fmt.Fprint(stdout, usage+o.flags.FlagUsages())
		return ExitHealthy
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\nSee 'kubectl conditions --help'.\n", err)
		return ExitError
	}
	cfg, err := o.config.ClientConfig()
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return ExitError
	}
	q := Query{Kinds: o.kinds, Selector: o.selector, IncludeHealthy: o.all, ClusterScoped: true}
	if !o.allNamespaces {
		ns, _, err := o.config.Namespace()
		if err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return ExitError
		}
		q.Namespace = ns
		q.ClusterScoped = !o.flags.Changed("namespace")
	}
	s := &Scanner{Config: cfg, Progress: progress(stderr, o.progress)}
	code := ExitError
	for scans := 0; ; scans++ {
		if o.watch && o.output == "" {
			if scans > 0 {
				fmt.Fprintln(stdout)
			}
			fmt.Fprintf(stdout, "Every %s: %s\n\n", o.interval, time.Now().Format(time.TimeOnly))
		}
		report, err := s.Scan(ctx, q)
		if !o.watch {
			return printOutcome(report, err, o, stdout, stderr, scans)
		}
		if ctx.Err() != nil {
			return code // interrupted: the status of the last complete scan
		}
		code = printOutcome(report, err, o, stdout, stderr, scans)
		t := time.NewTimer(o.interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return code
		case <-t.C:
		}
	}
}

// printOutcome prints a scan's report, warnings and error and returns the
// exit status.
func printOutcome(report *Report, err error, o *options, stdout, stderr io.Writer, scans int) int {
	if report != nil {
		for _, w := range report.Warnings {
			fmt.Fprintf(stderr, "Warning: %s\n", w)
		}
	}
	// A report of nothing scanned says nothing: only the error then.
	if report != nil && (err == nil || report.ResourceTypes > 0) {
		if perr := printReport(stdout, report, o.output, o.watch && scans > 0, time.Now()); perr != nil {
			err = errors.Join(err, perr)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return ExitError
	}
	if report.Unhealthy > 0 {
		return ExitUnhealthy
	}
	return ExitHealthy
}

// progress returns the Scanner's Progress for stderr: on a terminal one line
// rewritten in place when the scan has many types, with force one line per
// type wherever stderr goes; otherwise nil.
func progress(stderr io.Writer, force bool) func(done, total int, resource string) {
	tty := false
	if f, ok := stderr.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	switch {
	case tty:
		return func(done, total int, resource string) {
			if total < progressThreshold && !force {
				return
			}
			if done == total {
				fmt.Fprint(stderr, "\r\033[K")
				return
			}
			fmt.Fprintf(stderr, "\r\033[Kscanned %d/%d resource types (%s)", done, total, resource)
		}
	case force:
		return func(done, total int, resource string) {
			fmt.Fprintf(stderr, "scanned %d/%d resource types (%s)\n", done, total, resource)
		}
	}
	return nil
}

// printReport writes the report as a table, JSON or YAML (a "---" before
// it when more documents came before).
func printReport(w io.Writer, r *Report, format string, more bool, now time.Time) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "yaml":
		data, err := yaml.Marshal(r)
		if err != nil {
			return err
		}
		if more {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		_, err = w.Write(data)
		return err
	}
	if len(r.Objects) > 0 {
		kinds := displayKinds(r.Objects)
		tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
		fmt.Fprintln(tw, "KIND\tNAMESPACE/NAME\tCONDITION\tSTATUS\tREASON\tAGE\tMESSAGE")
		for _, o := range r.Objects {
			name := o.Name
			if o.Namespace != "" {
				name = o.Namespace + "/" + o.Name
			}
			for _, f := range o.Findings {
				age := "-"
				if f.Since != nil {
					age = duration.HumanDuration(now.Sub(*f.Since))
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", kinds[o.Resource], name, f.Condition,
					cell(f.Status), cell(f.Reason), age, cell(f.Message))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	_, err := fmt.Fprintln(w, summary(r))
	return err
}

// summary is the last line of the table.
func summary(r *Report) string {
	types := fmt.Sprintf("%d resource types", r.ResourceTypes)
	if r.ResourceTypes == 1 {
		types = "1 resource type"
	}
	if r.Unhealthy == 0 {
		return fmt.Sprintf("No unhealthy objects: %d healthy in %s.", r.Healthy, types)
	}
	return fmt.Sprintf("%d unhealthy, %d healthy objects in %s.", r.Unhealthy, r.Healthy, types)
}

// displayKinds names each resource type of the objects by its kind, or by
// Kind.group where two groups have the same kind.
func displayKinds(objs []Object) map[string]string {
	groups := map[string]map[string]bool{}
	for _, o := range objs {
		if groups[o.Kind] == nil {
			groups[o.Kind] = map[string]bool{}
		}
		groups[o.Kind][o.Resource] = true
	}
	out := map[string]string{}
	for _, o := range objs {
		out[o.Resource] = o.Kind
		if len(groups[o.Kind]) > 1 {
			if _, group, ok := strings.Cut(o.Resource, "."); ok {
				out[o.Resource] = o.Kind + "." + group
			}
		}
	}
	return out
}

func cell(s string) string {
	if s == "" {
		return "-"
	}
	return oneLine(s)
}

// oneLine keeps a message on its table row.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
