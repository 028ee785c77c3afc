package docs_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The rules for Go code blocks (```go) in docs/*.md, README.md and
// CHANGELOG.md:
//
//   - A complete file: a package clause with only comments before it (a
//     first line "// file: <path>", a package comment). All of them are
//     vetted, which type-checks them, test files included, by one go vet in
//     a temporary module example.com/bucket that requires steady, replaced
//     by this checkout, with the versions of its go.mod and go.sum (no
//     network: GOPROXY=off). The module starts as a copy of
//     testdata/bucket, a kubebuilder-style project (the Bucket API package
//     without its types file, and the CRD); a block whose first line is
//     "// file: <path>" is written at that path (conditions.md writes
//     api/v1/bucket_types.go), any other block in a directory of its own.
//     A block whose package name ends in _test, or that declares a Test,
//     Benchmark, Fuzz or TestMain function, is written as a _test.go file.
//     With STEADY_DOCS_RUN=1 the module's tests run too (testing.md's suite
//     needs the control plane).
//   - A fragment taken from compiled code: its first line is
//     "// Example: <pkg>.<Name>", where <pkg> is a directory of the
//     repository (reconcile, examples/memcached/internal/controller) and
//     Name a function, a type, a variable or a Type.Method declared in its
//     Go files (an Example in its *_test.go files, or an example
//     operator's source, which its own tests run). The
//     rest of the block, line by line with indentation ignored, must be a
//     contiguous run of that declaration's lines; a line "// ..." skips
//     lines.
//
// Any other go block fails the test. Blocks in other languages are not
// checked.

const (
	fileMarker        = "// file: "
	exampleMarker     = "// Example: "
	gapMarker         = "// ..."
	maxGettingStarted = 60

	// runEnv, set to 1, also runs the documentation's tests (testing.md's
	// suite needs the control plane: KUBEBUILDER_ASSETS as for make test).
	runEnv = "STEADY_DOCS_RUN"
)

type block struct {
	doc   string // path relative to the repository root
	n     int    // 1-based index among the doc's go blocks
	line  int    // line of the opening fence in the doc
	lines []string
}

func (b block) String() string { return fmt.Sprintf("%s go block %d (line %d)", b.doc, b.n, b.line) }

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found from docs/: %v", err)
	}
	return root
}

func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md", "CHANGELOG.md"}
	for _, d := range docs {
		files = append(files, filepath.Join("docs", filepath.Base(d)))
	}
	sort.Strings(files[2:])
	return files
}

var fence = regexp.MustCompile("^(\\s*)(```+|~~~+)\\s*([A-Za-z0-9_+-]*)")

// goBlocks returns the ```go blocks of a markdown file, with the fence's
// indentation removed from their lines.
func goBlocks(t *testing.T, root, doc string) []block {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		if doc == "CHANGELOG.md" && os.IsNotExist(err) {
			return nil
		}
		t.Fatal(err)
	}
	var (
		blocks  []block
		open    bool
		indent  string
		marker  string
		lang    string
		current block
		n       int
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := sc.Text()
		if !open {
			if m := fence.FindStringSubmatch(line); m != nil {
				open, indent, marker, lang = true, m[1], m[2], m[3]
				current = block{doc: doc, line: lineNo}
			}
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(line), marker) && strings.TrimSpace(line) == strings.Repeat(string(marker[0]), len(strings.TrimSpace(line))) {
			open = false
			if lang == "go" || lang == "golang" {
				n++
				current.n = n
				blocks = append(blocks, current)
			}
			continue
		}
		current.lines = append(current.lines, strings.TrimPrefix(line, indent))
	}
	if open {
		t.Errorf("%s: the code block opened at line %d is not closed", doc, current.line)
	}
	return blocks
}

func firstLine(b block) string {
	for _, l := range b.lines {
		if strings.TrimSpace(l) != "" {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// TestCodeBlocks compiles every complete Go file of the documentation in one
// go vet, and checks every fragment against its Example.
func TestCodeBlocks(t *testing.T) {
	root := repoRoot(t)
	var files []block
	for _, doc := range markdownFiles(t, root) {
		for _, b := range goBlocks(t, root, doc) {
			switch first := firstLine(b); {
			case strings.HasPrefix(first, exampleMarker):
				checkFragment(t, root, b, strings.TrimSpace(strings.TrimPrefix(first, exampleMarker)))
			case isFileAfterComments(b):
				src := strings.Join(b.lines, "\n") + "\n"
				if formatted, err := format.Source([]byte(src)); err == nil && string(formatted) != src {
					t.Errorf("%s: not gofmt'ed; gofmt makes it:\n%s", b, formatted)
				}
				files = append(files, b)
			default:
				t.Errorf("%s: a go block must be a complete file (starting with a package clause, or %q) or a fragment whose first line is %q; it starts with %q",
					b, fileMarker+"<path>", exampleMarker+"<pkg>.<Name>", first)
			}
		}
	}
	if len(files) == 0 {
		t.Fatal("no complete Go files found in the documentation")
	}
	compile(t, root, files)
}

// isFileAfterComments reports whether the block is a file whose package
// clause follows a comment (a package comment).
func isFileAfterComments(b block) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", strings.Join(b.lines, "\n"), parser.PackageClauseOnly)
	return err == nil && f.Name != nil
}

// compile writes the blocks into a temporary module and runs go vet on it, reporting errors at the documentation's lines.
func compile(t *testing.T, root string, blocks []block) {
	t.Helper()
	dir := t.TempDir()
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	modLine := regexp.MustCompile(`(?m)^module .*$`)
	gomod = modLine.ReplaceAll(gomod, []byte("module example.com/bucket"))
	gomod = append(gomod, fmt.Sprintf("\nrequire github.com/steadyk8s/steady v0.0.0\n\nreplace github.com/steadyk8s/steady => %s\n", root)...)
	write(t, filepath.Join(dir, "go.mod"), gomod)
	if sum, err := os.ReadFile(filepath.Join(root, "go.sum")); err == nil {
		write(t, filepath.Join(dir, "go.sum"), sum)
	}
	// The fixture: what a user's module holds besides the documented files.
	fixture := filepath.Join(root, "docs", "testdata", "bucket")
	err = filepath.WalkDir(fixture, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(fixture, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		write(t, filepath.Join(dir, rel), data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	origin := map[string]block{} // module-relative file -> block
	bad := false
	for _, b := range blocks {
		lines := b.lines
		var rel string
		if first := firstLine(b); strings.HasPrefix(first, fileMarker) {
			rel = filepath.Clean(strings.TrimSpace(strings.TrimPrefix(first, fileMarker)))
			if filepath.IsAbs(rel) || strings.HasPrefix(rel, "..") || !strings.HasSuffix(rel, ".go") {
				t.Errorf("%s: %q must name a .go file inside the module", b, first)
				bad = true
				continue
			}
		} else {
			name := "block.go"
			if isTestFile(lines) {
				name = "block_test.go"
			}
			slug := strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(strings.TrimSuffix(b.doc, ".md"))
			rel = filepath.Join("blocks", fmt.Sprintf("%s_%d", slug, b.n), name)
		}
		if prev, ok := origin[rel]; ok {
			t.Errorf("%s: %s is written by %s already", b, rel, prev)
			bad = true
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, rel)); err == nil {
			t.Errorf("%s: %s is a file of the fixture docs/testdata/bucket", b, rel)
			bad = true
			continue
		}
		origin[rel] = b
		write(t, filepath.Join(dir, rel), []byte(strings.Join(lines, "\n")+"\n"))
	}
	if bad {
		return
	}

	// go vet type-checks every package, test files included, in one command;
	// go build would add nothing but the compiled objects.
	steps := [][]string{append([]string{"vet"}, goBuildFlags...)}
	if os.Getenv(runEnv) != "" {
		steps = append(steps, append([]string{"test", "-v", "-count=1"}, goBuildFlags...))
	}
	for _, args := range steps {
		args = append(args, "./...")
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("go %s of the documentation's code blocks failed:\n%s", strings.Join(args, " "), translate(string(out), dir, origin))
		} else if args[0] == "test" {
			t.Logf("go %s:\n%s", strings.Join(args, " "), translate(string(out), dir, origin))
		}
	}
}

// goBuildFlags are the build flags of this test binary that the go
// commands it runs repeat (race_test.go sets -race).
var goBuildFlags []string

var position = regexp.MustCompile(`((?:\./)?[A-Za-z0-9_./-]+\.go):(\d+)(?::(\d+))?`)

// translate rewrites positions in the blocks' files into documentation lines.
func translate(out, dir string, origin map[string]block) string {
	out = strings.ReplaceAll(out, dir+string(filepath.Separator), "")
	return position.ReplaceAllStringFunc(out, func(m string) string {
		sub := position.FindStringSubmatch(m)
		rel := filepath.Clean(sub[1])
		b, ok := origin[rel]
		if !ok {
			return m
		}
		l, _ := strconv.Atoi(sub[2])
		return fmt.Sprintf("%s:%d [%s, line %d of the block]", b.doc, b.line+l, b, l)
	})
}

func isTestFile(lines []string) bool {
	src := strings.Join(lines, "\n")
	f, err := parser.ParseFile(token.NewFileSet(), "", src, 0)
	if err != nil {
		return false
	}
	if strings.HasSuffix(f.Name.Name, "_test") {
		return true
	}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
			name := fn.Name.Name
			if name == "TestMain" || strings.HasPrefix(name, "Test") || strings.HasPrefix(name, "Benchmark") || strings.HasPrefix(name, "Fuzz") {
				return true
			}
		}
	}
	return false
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkFragment checks that a block marked "// Example: pkg.Name" is a
// contiguous excerpt of that declaration in pkg's test files.
func checkFragment(t *testing.T, root string, b block, ref string) {
	t.Helper()
	dot := strings.Index(ref, ".")
	if dot < 0 {
		t.Errorf("%s: %q must be <pkg>.<Name>", b, exampleMarker+ref)
		return
	}
	pkg, name := ref[:dot], ref[dot+1:]
	decl, err := declSource(filepath.Join(root, filepath.FromSlash(pkg)), name)
	if err != nil {
		t.Errorf("%s: %v", b, err)
		return
	}
	var frag []string
	seenMarker := false
	for _, l := range b.lines {
		if !seenMarker && strings.HasPrefix(strings.TrimSpace(l), exampleMarker) {
			seenMarker = true
			continue
		}
		frag = append(frag, l)
	}
	if err := excerpt(normalize(frag), normalize(strings.Split(decl, "\n"))); err != nil {
		t.Errorf("%s: not taken from %s: %v", b, ref, err)
	}
}

// declSource returns the source of the function, method (Type.Method) or
// type named name in the Go files of dir.
func declSource(dir, name string) (string, error) {
	fset := token.NewFileSet()
	matches, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(matches) == 0 {
		return "", fmt.Errorf("no Go files in %s", dir)
	}
	recv, fn := "", name
	if i := strings.Index(name, "."); i >= 0 {
		recv, fn = name[:i], name[i+1:]
	}
	for _, path := range matches {
		src, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return "", err
		}
		for _, d := range f.Decls {
			var node ast.Node
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.Name == fn && receiver(d) == recv {
					node = d
				}
			case *ast.GenDecl:
				if recv != "" {
					continue
				}
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.Name == fn {
							node = d
						}
					case *ast.ValueSpec:
						for _, id := range s.Names {
							if id.Name == fn {
								node = d
							}
						}
					}
				}
			}
			if node != nil {
				start := fset.Position(node.Pos()).Offset
				if doc := docOf(node); doc != nil {
					start = fset.Position(doc.Pos()).Offset
				}
				return string(src[start:fset.Position(node.End()).Offset]), nil
			}
		}
	}
	return "", fmt.Errorf("no declaration %s in %s/*.go", name, filepath.Base(dir))
}

func docOf(n ast.Node) *ast.CommentGroup {
	switch n := n.(type) {
	case *ast.FuncDecl:
		return n.Doc
	case *ast.GenDecl:
		return n.Doc
	}
	return nil
}

func receiver(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return ""
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name
	}
	return "?"
}

func normalize(lines []string) []string {
	var out []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// excerpt checks that frag, split at "// ..." lines, is found in decl in
// order, each part as contiguous lines.
func excerpt(frag, decl []string) error {
	if len(normalize(frag)) == 0 {
		return fmt.Errorf("the fragment is empty")
	}
	var parts [][]string
	cur := []string{}
	for _, l := range frag {
		if l == gapMarker {
			parts = append(parts, cur)
			cur = []string{}
			continue
		}
		cur = append(cur, l)
	}
	parts = append(parts, cur)
	at := 0
	for _, p := range parts {
		if len(p) == 0 {
			continue
		}
		found := -1
	search:
		for i := at; i+len(p) <= len(decl); i++ {
			for j := range p {
				if decl[i+j] != p[j] {
					continue search
				}
			}
			found = i
			break
		}
		if found < 0 {
			return fmt.Errorf("these lines are not in it (in this order, after what came before):\n\t%s", strings.Join(p, "\n\t"))
		}
		at = found + len(p)
	}
	return nil
}

// TestGettingStartedIsShort keeps the getting-started guide under 60 lines.
func TestGettingStartedIsShort(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "getting-started.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.TrimRight(string(data), "\n"), "\n") + 1; n >= maxGettingStarted {
		t.Errorf("docs/getting-started.md has %d lines, want fewer than %d", n, maxGettingStarted)
	}
}

var link = regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)

// TestLinks checks that relative links between the documents point at files
// of the repository.
func TestLinks(t *testing.T) {
	root := repoRoot(t)
	for _, doc := range markdownFiles(t, root) {
		data, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			continue
		}
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path := filepath.Join(root, filepath.Dir(doc), filepath.FromSlash(target))
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link to %s: %v", doc, target, err)
				continue
			}
			if anchor := strings.TrimPrefix(m[2], "#"); anchor != "" && strings.HasSuffix(target, ".md") {
				if !headings(t, path)[anchor] {
					t.Errorf("%s: link to %s#%s: no such heading", doc, target, anchor)
				}
			}
		}
	}
}

// headings returns the anchors GitHub makes of a markdown file's headings.
func headings(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	inCode := false
	for _, l := range strings.Split(string(data), "\n") {
		if fence.MatchString(l) {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(l, "#") {
			continue
		}
		title := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
		var b strings.Builder
		for _, r := range title {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9'):
				b.WriteRune(r)
			}
		}
		anchors[b.String()] = true
	}
	return anchors
}

// TestGuides checks that every package has its guide.
func TestGuides(t *testing.T) {
	root := repoRoot(t)
	for _, name := range []string{"getting-started", "testing", "architecture", "compatibility",
		"reconcile", "conditions", "finalizer", "ownership", "indexer", "predicates", "cachewait", "applyset"} {
		if _, err := os.Stat(filepath.Join(root, "docs", name+".md")); err != nil {
			t.Errorf("docs/%s.md: %v", name, err)
		}
	}
}

var edge = regexp.MustCompile(`^\s*([a-z/]+)\s*-->\s*([a-z/]+)\s*$`)

// TestArchitectureGraph checks the Mermaid graph of architecture.md against
// the imports between steady's packages, as go list reports them.
func TestArchitectureGraph(t *testing.T) {
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]bool{}
	inGraph := false
	for _, l := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(l, "```mermaid"):
			inGraph = true
		case inGraph && strings.HasPrefix(l, "```"):
			inGraph = false
		case inGraph:
			if m := edge.FindStringSubmatch(l); m != nil {
				doc[m[1]+" --> "+m[2]] = true
			}
		}
	}
	const mod = "github.com/steadyk8s/steady/"
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	code := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		from := strings.TrimPrefix(f[0], mod)
		if !strings.HasPrefix(f[0], mod) || from == "internal/testapi" || strings.HasPrefix(from, "docs") {
			continue
		}
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, mod) {
				code[from+" --> "+strings.TrimPrefix(imp, mod)] = true
			}
		}
	}
	for e := range code {
		if !doc[e] {
			t.Errorf("docs/architecture.md: the graph lacks %s (an import in the code)", e)
		}
	}
	for e := range doc {
		if !code[e] {
			t.Errorf("docs/architecture.md: the graph has %s, which the code does not import", e)
		}
	}
}

// TestNoMergeConflictMarkers: no file of the repository (Go, Markdown,
// go.mod, YAML, shell, Makefile) holds a line a merge conflict left
// (CHANGELOG.md once kept one for two sessions).
func TestNoMergeConflictMarkers(t *testing.T) {
	root := repoRoot(t)
	starts := []string{strings.Repeat("<", 7) + " ", strings.Repeat(">", 7) + " "}
	text := func(name string) bool {
		switch filepath.Ext(name) {
		case ".go", ".md", ".mod", ".yaml", ".yml", ".sh":
			return true
		}
		return name == "Makefile"
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !text(d.Name()) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, s := range starts {
				if strings.HasPrefix(line, s) {
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s:%d: a merge conflict marker: %q", rel, i+1, line)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCompatibilityTable checks the versions of docs/compatibility.md's
// table against where they are set: the go.mod files, hack/compat-test.sh
// and the envtest assets' module.
func TestCompatibilityTable(t *testing.T) {
	if os.Getenv("STEADY_COMPAT") != "" {
		t.Skip("hack/compat-test.sh has moved the library's go.mod to other versions")
	}
	root := repoRoot(t)
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	// find is the first submatch of re in the file name.
	find := func(name, re string) string {
		m := regexp.MustCompile(re).FindStringSubmatch(read(name))
		if m == nil {
			t.Fatalf("%s: no %s", name, re)
		}
		return m[1]
	}
	require := func(name, module string) string {
		return find(name, `(?m)^\s*`+regexp.QuoteMeta(module)+` (v\S+)`)
	}
	want := map[string]string{
		"controller-runtime|the library's": require("go.mod", "sigs.k8s.io/controller-runtime"),
		"k8s.io/api,":                      require("go.mod", "k8s.io/api"),
		"controller-runtime|compat-test":   find("hack/compat-test.sh", `CR_VERSION:-(v\S+)}`),
		"k8s.io/* with it":                 find("hack/compat-test.sh", `K8S_VERSION:-(v\S+)}`),
		"sigs.k8s.io/cluster-api":          require("go.mod", "sigs.k8s.io/cluster-api"),
		"sigs.k8s.io/cli-utils":            require("go.mod", "sigs.k8s.io/cli-utils"),
		"Kubernetes API server":            require("hack/go.mod", "k8s.io/kubernetes"),
		"etcd":                             require("hack/go.mod", "go.etcd.io/etcd/server/v3"),
		"controller-gen":                   require("examples/go.mod", "sigs.k8s.io/controller-tools"),
	}
	rows := 0
	for _, l := range strings.Split(read("docs/compatibility.md"), "\n") {
		cells := strings.Split(l, "|")
		if len(cells) < 5 {
			continue
		}
		name, version, where := strings.TrimSpace(cells[1]), strings.Trim(strings.TrimSpace(cells[2]), "*"), cells[3]
		for key, v := range want {
			label, in, _ := strings.Cut(key, "|")
			if !strings.HasPrefix(name, label) || !strings.Contains(where, in) {
				continue
			}
			rows++
			if got, _, _ := strings.Cut(version, " "); got != v {
				t.Errorf("docs/compatibility.md: %s is %s in the table, %s where it is set", name, got, v)
			}
		}
	}
	if rows != len(want) {
		t.Errorf("docs/compatibility.md: %d of the table's %d versions found", rows, len(want))
	}
	// Every go.mod asks for Go 1.26.
	for _, mod := range []string{"go.mod", "hack/go.mod", "examples/go.mod", "bench/go.mod", "multicluster/go.mod", "examples/fleet/go.mod", "cmd/kubectl-conditions/go.mod"} {
		if v := find(mod, `(?m)^go (\S+)`); !strings.HasPrefix(v, "1.26.") {
			t.Errorf("%s: go %s, the table says 1.26", mod, v)
		}
	}
}
