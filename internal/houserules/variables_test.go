package houserules

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// processState are the package variables that hold state of the whole process, which is
// allowed nowhere else: each with why it cannot live in the engine's registry or an instance.
// TestPackageVariables fails for a mutable package variable that is neither here nor a
// Prometheus collector or a pool.
var processState = map[string]string{
	"internal/engine.Default":                     "the registry of the process: what outlives a Corefile reload",
	"internal/fastpath.live":                      "the fast path's servers of the process, which share GOMAXPROCS and the BPF steering",
	"internal/gctune.running":                     "the garbage collector's tuner: the collector is the process's",
	"internal/gctune.loads":                       "configuration loads in progress, which tune the process's collector",
	"internal/gctune.settle":                      "the timer that returns the process's memory once loads settle",
	"internal/cluster.redisLogger":                "go-redis's logger is one for the process (redis.SetLogger)",
	"internal/cluster.redisLoggerOnce":            "go-redis's logger is set once for the process",
	"internal/fastpath.sockTimeout":               "a test seam: how long a fast path socket blocks before it looks at its stop flag",
	"internal/fastpath.yield":                     "a test seam: how often a serving loop yields its processor",
	"internal/fastpath.procs":                     "GOMAXPROCS as the fast path raised it, for the process",
	"plugin/gslb.parent":                          "the parent of a binary upgrade, read once when the process starts",
	"cmd/meridian.Version":                        "set by the linker (-X main.Version)",
	"internal/health/probe.icmpListen":            "a test seam: how ICMP sockets are opened",
	"internal/health/probe.luaHTTPClient":         "the Lua checks' shared HTTP client: its connections are the process's",
	"internal/health/probe.luaHTTPClientInsecure": "the Lua checks' shared HTTP client without TLS verification",
	"internal/health/probe.lastTimeoutReason":     "a test seam: the reason a timed-out probe reports",
	"internal/health.probeMetricsByType":          "the probe metrics of each check type, made on its first use",
	"internal/health.managerIDs":                  "numbers the health managers of the process, so that a state tells the manager holding it from every other alive (State.owner)",
}

// mutators are the methods whose call on a package variable changes it.
var mutators = []string{"Store", "Swap", "CompareAndSwap", "Add", "Lock", "Do", "Reset", "Delete", "LoadOrStore"}

// collectorPackages are the packages whose values are Prometheus collectors and descriptions.
var collectorPackages = []string{"prometheus", "promauto"}

// pkgVar is one package variable and how its package uses it.
type pkgVar struct {
	pkg, name string
	init      ast.Expr // nil when declared without a value
	typ       ast.Expr
	written   string // where it is assigned or changed outside init, "" when it is not
}

// TestPackageVariables: a package variable of the product is a Prometheus collector or
// description, a sync.Pool, a value nothing changes after init (a table, an error, a regular
// expression, a logger), or process-wide state listed in processState with its reason.
func TestPackageVariables(t *testing.T) {
	for _, p := range products(t) {
		vars, descFuncs := packageVariables(t, p.path)
		for _, v := range vars {
			id := p.path + "." + v.name
			_, listed := processState[id]
			switch {
			case isCollector(v, descFuncs), isPool(v):
				if listed {
					t.Errorf("%s is listed in processState but is a collector or a pool", id)
				}
			case v.written == "" && !listed:
			case v.written == "" && listed:
			case !listed:
				t.Errorf("%s is a package variable that changes (%s): keep it in an instance or the engine's registry, or list it in processState with why it is the process's", id, v.written)
			}
		}
	}
	for id := range processState {
		pkg, name, _ := strings.Cut(id, ".")
		vars, _ := packageVariables(t, pkg)
		if !slices.ContainsFunc(vars, func(v pkgVar) bool { return v.name == name }) {
			t.Errorf("processState lists %s, which does not exist", id)
		}
	}
}

// packageVariables parses the package at path (from the module's root) without its tests and
// returns its package variables, and the names of its functions that return Prometheus
// descriptions.
func packageVariables(t *testing.T, path string) ([]pkgVar, map[string]bool) {
	t.Helper()
	fset := token.NewFileSet()
	dir := filepath.Join(root, path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	var vars []pkgVar
	descFuncs := map[string]bool{}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Type.Results != nil && len(d.Type.Results.List) == 1 && usesPackage(d.Type.Results.List[0].Type, collectorPackages) {
					descFuncs[d.Name.Name] = true
				}
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, s := range d.Specs {
					vs := s.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if n.Name == "_" {
							continue
						}
						v := pkgVar{pkg: path, name: n.Name, typ: vs.Type}
						if i < len(vs.Values) {
							v.init = vs.Values[i]
						}
						vars = append(vars, v)
					}
				}
			}
		}
	}
	for i := range vars {
		vars[i].written = writes(fset, files, vars[i].name)
	}
	return vars, descFuncs
}

// writes returns where a function of files other than init assigns to name (or an element or
// field of it), changes it with ++ or --, or calls a mutating method on it;
// "" when none does. A local variable of the same name hides it: a function that declares one
// is not searched.
func writes(fset *token.FileSet, files []*ast.File, name string) string {
	for _, f := range files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil || fn.Name.Name == "init" && fn.Recv == nil || declares(fn, name) {
				continue
			}
			var where token.Pos
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if where.IsValid() {
					return false
				}
				switch n := n.(type) {
				case *ast.AssignStmt:
					if n.Tok == token.DEFINE {
						return true
					}
					for _, lhs := range n.Lhs {
						if rootIs(lhs, name) {
							where = n.Pos()
						}
					}
				case *ast.IncDecStmt:
					if rootIs(n.X, name) {
						where = n.Pos()
					}
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && slices.Contains(mutators, sel.Sel.Name) && rootIs(sel.X, name) {
						where = n.Pos()
					}
				}
				return true
			})
			if where.IsValid() {
				return fset.Position(where).String()
			}
		}
	}
	return ""
}

// declares reports whether fn declares a parameter, result or local variable called name.
func declares(fn *ast.FuncDecl, name string) bool {
	found := false
	ast.Inspect(fn, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Field:
			for _, id := range n.Names {
				found = found || id.Name == name
			}
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, lhs := range n.Lhs {
					if id, ok := lhs.(*ast.Ident); ok && id.Name == name {
						found = true
					}
				}
			}
		case *ast.ValueSpec:
			for _, id := range n.Names {
				found = found || id.Name == name
			}
		case *ast.RangeStmt:
			for _, x := range []ast.Expr{n.Key, n.Value} {
				if id, ok := x.(*ast.Ident); ok && id.Name == name && n.Tok == token.DEFINE {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// rootIs reports whether the expression x is name, or an element, field or dereference of it.
func rootIs(x ast.Expr, name string) bool {
	for {
		switch e := x.(type) {
		case *ast.Ident:
			return e.Name == name
		case *ast.IndexExpr:
			x = e.X
		case *ast.SelectorExpr:
			x = e.X
		case *ast.StarExpr:
			x = e.X
		case *ast.ParenExpr:
			x = e.X
		default:
			return false
		}
	}
}

// usesPackage reports whether the expression names an identifier of one of pkgs (prometheus.X).
func usesPackage(x ast.Expr, pkgs []string) bool {
	found := false
	ast.Inspect(x, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && slices.Contains(pkgs, id.Name) {
				found = true
			}
		}
		return !found
	})
	return found
}

// isCollector reports whether v is a Prometheus collector, vector or description: its type
// or its value comes from the Prometheus packages, directly or through a function of its
// package that returns one (descFuncs), or a composite of such.
func isCollector(v pkgVar, descFuncs map[string]bool) bool {
	if v.typ != nil && usesPackage(v.typ, collectorPackages) || v.init != nil && usesPackage(v.init, collectorPackages) {
		return true
	}
	if call, ok := v.init.(*ast.CallExpr); ok {
		if id, ok := call.Fun.(*ast.Ident); ok && descFuncs[id.Name] {
			return true
		}
	}
	if u, ok := v.init.(*ast.UnaryExpr); ok { // &collector{...}: a collector type of its package
		if lit, ok := u.X.(*ast.CompositeLit); ok {
			if id, ok := lit.Type.(*ast.Ident); ok && strings.Contains(strings.ToLower(id.Name), "metric") {
				return true
			}
		}
	}
	return false
}

// isPool reports whether v is a sync.Pool.
func isPool(v pkgVar) bool {
	lit, ok := v.init.(*ast.CompositeLit)
	if !ok {
		return false
	}
	sel, ok := lit.Type.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Pool" && usesPackage(sel, []string{"sync"})
}
