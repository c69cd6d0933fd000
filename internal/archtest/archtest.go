// Package archtest checks Tiler's architecture rules on the module's real import graph and
// source: which packages may import which (directly or anywhere in their dependencies), that the
// pure packages read no clock, and that the product binary links no test machinery. The rules
// are data (rules.go); this file is the checker. Its test runs them over the module in
// `go test ./...` and `make verify`, so a broken rule fails CI instead of waiting for review.
//
// The import graph comes from `go list -deps -json` (the go command's own resolution, build
// constraints included), the clock reads from go/parser, so comments, strings and identifiers
// that merely look like time.Now do not count and a renamed import of package time does.
package archtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	pathpkg "path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Package is one package as `go list -json` describes it: the fields the checks read.
type Package struct {
	ImportPath string
	Name       string
	// Dir holds the package's source files.
	Dir string
	// GoFiles and CgoFiles are the non-test .go files of this build in Dir; IgnoredGoFiles are
	// the .go files its build constraints exclude, test files among them (the clock check skips
	// those).
	GoFiles, CgoFiles, IgnoredGoFiles []string
	// TestGoFiles and XTestGoFiles are the package's _test.go files (in-package and external).
	TestGoFiles, XTestGoFiles []string
	// Imports are the direct imports of its non-test files, resolved (vendored standard-library
	// paths included).
	Imports []string
	// DepOnly is set for packages that are only dependencies of the listed ones (the standard
	// library and other modules, with go list -deps).
	DepOnly bool
}

// Graph is a set of packages by import path: the listed ones and every dependency.
type Graph struct {
	// Packages are the packages in go list's order (dependencies first).
	Packages []*Package
	byPath   map[string]*Package
}

// NewGraph indexes packages by import path.
func NewGraph(pkgs []*Package) *Graph {
	g := &Graph{Packages: pkgs, byPath: make(map[string]*Package, len(pkgs))}
	for _, p := range pkgs {
		g.byPath[p.ImportPath] = p
	}
	return g
}

// Package returns the package with the import path, or nil.
func (g *Graph) Package(path string) *Package { return g.byPath[path] }

// Listed returns the packages the patterns matched (not DepOnly), in import-path order.
func (g *Graph) Listed() []*Package {
	var out []*Package
	for _, p := range g.Packages {
		if !p.DepOnly {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ImportPath < out[j].ImportPath })
	return out
}

// Load runs `go list -deps -json` on patterns in dir (the module root) and returns the graph.
func Load(ctx context.Context, dir string, patterns ...string) (*Graph, error) {
	args := append([]string{"list", "-deps", "-json=ImportPath,Name,Dir,GoFiles,CgoFiles,IgnoredGoFiles,TestGoFiles,XTestGoFiles,Imports,DepOnly"}, patterns...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var pkgs []*Package
	dec := json.NewDecoder(&stdout)
	for {
		p := &Package{}
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decoding go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	return NewGraph(pkgs), nil
}

// ModuleRoot returns the directory of the go.mod that governs dir.
func ModuleRoot(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "env", "GOMOD")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == "/dev/null" || gomod == "NUL" {
		return "", fmt.Errorf("%s is not inside a module", dir)
	}
	return filepath.Dir(gomod), nil
}

// Pattern matches import paths as the go command's patterns do, without wildcards in the middle:
// "p" matches p alone, "p/..." matches p and every package under it.
type Pattern string

// Match reports whether the import path matches.
func (p Pattern) Match(path string) bool {
	if prefix, ok := strings.CutSuffix(string(p), "/..."); ok {
		return path == prefix || strings.HasPrefix(path, prefix+"/")
	}
	return path == string(p)
}

// Patterns matches when any of its patterns does.
type Patterns []Pattern

// Match reports whether any pattern matches the import path.
func (ps Patterns) Match(path string) bool {
	for _, p := range ps {
		if p.Match(path) {
			return true
		}
	}
	return false
}

// ImportRule forbids the packages matching From, other than those matching Except, to import a
// package matching Deny that does not match Allow: directly, or with Transitive anywhere in
// their dependencies.
type ImportRule struct {
	// Name identifies the rule in failures; Why says what it protects.
	Name, Why    string
	From, Except Patterns
	Deny, Allow  Patterns
	Transitive   bool
}

// Violation is one breach of a rule.
type Violation struct {
	Rule    string
	Package string
	// Detail says what breaks the rule: "imports P", "depends on P via A → B → P", or a file
	// position and the clock function it references.
	Detail string
}

// String is the violation as one line: rule, package, detail.
func (v Violation) String() string { return v.Rule + ": " + v.Package + " " + v.Detail }

// CheckImports returns every breach of the rules in the graph's listed packages, sorted.
func CheckImports(g *Graph, rules []ImportRule) []Violation {
	var out []Violation
	for _, r := range rules {
		for _, p := range g.Listed() {
			if !r.From.Match(p.ImportPath) || r.Except.Match(p.ImportPath) {
				continue
			}
			denied := func(path string) bool { return r.Deny.Match(path) && !r.Allow.Match(path) }
			if !r.Transitive {
				for _, imp := range p.Imports {
					if denied(imp) {
						out = append(out, Violation{Rule: r.Name, Package: p.ImportPath, Detail: "imports " + imp})
					}
				}
				continue
			}
			for _, chain := range g.deniedReach(p.ImportPath, denied) {
				out = append(out, Violation{Rule: r.Name, Package: p.ImportPath,
					Detail: "depends on " + chain[len(chain)-1] + " via " + strings.Join(chain, " → ")})
			}
		}
	}
	sortViolations(out)
	return out
}

// deniedReach walks the imports from the package breadth first and returns, for every denied
// package it reaches without passing through another denied one, the shortest import chain to it
// (the package itself first). Stopping at the first denied package keeps the report to where the
// forbidden code enters, not the hundred packages behind it.
func (g *Graph) deniedReach(from string, denied func(string) bool) [][]string {
	parent := map[string]string{from: ""}
	queue := []string{from}
	var hits []string
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		p := g.byPath[cur]
		if p == nil {
			continue
		}
		for _, imp := range p.Imports {
			if _, seen := parent[imp]; seen {
				continue
			}
			parent[imp] = cur
			if denied(imp) {
				hits = append(hits, imp)
				continue
			}
			queue = append(queue, imp)
		}
	}
	sort.Strings(hits)
	chains := make([][]string, 0, len(hits))
	for _, h := range hits {
		var chain []string
		for n := h; n != ""; n = parent[n] {
			chain = append([]string{n}, chain...)
		}
		chains = append(chains, chain)
	}
	return chains
}

// ClockFuncs are the functions of package time that read or wait on the wall clock. A pure
// package takes the time as data (a now argument, a clock.PassiveClock) so that its results are
// reproducible and its tests need no waiting.
var ClockFuncs = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "AfterFunc": true,
	"Tick": true, "NewTicker": true, "NewTimer": true,
}

// ClockIdents are, per import path, the identifiers a pure package must not reference: the clock
// functions of package time, and k8s.io/utils/clock's RealClock — a default of the real clock in a
// pure package reads the wall clock as surely as time.Now (the caller injects the clock instead).
var ClockIdents = map[string]map[string]bool{
	"time":               ClockFuncs,
	"k8s.io/utils/clock": {"RealClock": true},
}

// ClockRule forbids the non-test .go files of the packages matching From, other than those
// matching Except, to reference a clock identifier (ClockIdents).
type ClockRule struct {
	// Name identifies the rule in failures; Why says what it protects.
	Name, Why    string
	From, Except Patterns
}

// ClockRead is a reference to a clock function of package time in a source file.
type ClockRead struct {
	Pos token.Position
	// Func is what the source says, e.g. "time.Now" or "t.Since" for an import renamed t, or
	// `import . "time"` for a dot import, which would let clock functions be called unqualified.
	Func string
}

// ClockReads parses one Go source file (src as parser.ParseFile takes it: nil reads filename)
// and returns its references to the clock functions of package time: calls, and function values
// such as `now := time.Now`. The package is found by its import, so a renamed import counts and a
// comment or string does not; a local variable that shadows the import's name counts too (rename
// it), which errs on the strict side.
func ClockReads(fset *token.FileSet, filename string, src any) ([]ClockRead, error) {
	f, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", filename, err)
	}
	names := map[string]map[string]bool{} // the file's name for an import → its forbidden identifiers
	var out []ClockRead
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		idents := ClockIdents[path]
		if err != nil || idents == nil {
			continue
		}
		switch {
		case imp.Name == nil:
			names[pathpkg.Base(path)] = idents
		case imp.Name.Name == ".":
			out = append(out, ClockRead{Pos: fset.Position(imp.Pos()), Func: `import . "` + path + `"`})
		case imp.Name.Name != "_":
			names[imp.Name.Name] = idents
		}
	}
	if len(names) == 0 {
		return out, nil
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok && names[x.Name][sel.Sel.Name] {
			out = append(out, ClockRead{Pos: fset.Position(sel.Pos()), Func: x.Name + "." + sel.Sel.Name})
		}
		return true
	})
	return out, nil
}

// CheckClock returns every clock read in the non-test files of the packages the rules cover,
// including files that build constraints leave out of this platform's build.
func CheckClock(g *Graph, rules []ClockRule) ([]Violation, error) {
	var out []Violation
	fset := token.NewFileSet()
	for _, r := range rules {
		for _, p := range g.Listed() {
			if !r.From.Match(p.ImportPath) || r.Except.Match(p.ImportPath) {
				continue
			}
			var files []string
			for _, list := range [][]string{p.GoFiles, p.CgoFiles, p.IgnoredGoFiles} {
				for _, f := range list {
					if strings.HasSuffix(f, ".go") && !strings.HasSuffix(f, "_test.go") {
						files = append(files, f)
					}
				}
			}
			sort.Strings(files)
			for _, f := range files {
				reads, err := ClockReads(fset, filepath.Join(p.Dir, f), nil)
				if err != nil {
					return nil, fmt.Errorf("package %s: %w", p.ImportPath, err)
				}
				for _, cr := range reads {
					out = append(out, Violation{Rule: r.Name, Package: p.ImportPath,
						Detail: fmt.Sprintf("%s:%d:%d: %s", f, cr.Pos.Line, cr.Pos.Column, cr.Func)})
				}
			}
		}
	}
	sortViolations(out)
	return out, nil
}

// Unmatched returns the patterns of the rules that name a package of module (a path under it)
// but match no listed package of the graph: a rule about a package that was renamed or moved
// checks nothing, and must be updated rather than pass in silence.
func Unmatched(g *Graph, module string, imports []ImportRule, clocks []ClockRule) []string {
	var pats Patterns
	for _, r := range imports {
		pats = append(append(append(append(pats, r.From...), r.Except...), r.Deny...), r.Allow...)
	}
	for _, r := range clocks {
		pats = append(append(pats, r.From...), r.Except...)
	}
	listed := g.Listed()
	seen := map[Pattern]bool{}
	var out []string
	for _, pat := range pats {
		if seen[pat] || !(Pattern(module + "/...").Match(strings.TrimSuffix(string(pat), "/..."))) {
			continue
		}
		seen[pat] = true
		found := false
		for _, p := range listed {
			if pat.Match(p.ImportPath) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, string(pat))
		}
	}
	sort.Strings(out)
	return out
}

func sortViolations(vs []Violation) {
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].String() < vs[j].String() })
}

// CheckTestSleeps returns every time.Sleep in the _test.go files of the graph's listed packages
// other than those matching except. A test that waits a fixed time is a flaky test: it waits on a
// condition (internal/testwait) or drives a fake clock instead.
func CheckTestSleeps(g *Graph, except Patterns) ([]Violation, error) {
	var out []Violation
	fset := token.NewFileSet()
	for _, p := range g.Listed() {
		if except.Match(p.ImportPath) {
			continue
		}
		files := append(append([]string(nil), p.TestGoFiles...), p.XTestGoFiles...)
		sort.Strings(files)
		for _, f := range files {
			reads, err := ClockReads(fset, filepath.Join(p.Dir, f), nil)
			if err != nil {
				return nil, fmt.Errorf("package %s: %w", p.ImportPath, err)
			}
			for _, cr := range reads {
				if strings.HasSuffix(cr.Func, ".Sleep") {
					out = append(out, Violation{Rule: "no-test-sleep", Package: p.ImportPath,
						Detail: fmt.Sprintf("%s:%d:%d: %s", f, cr.Pos.Line, cr.Pos.Column, cr.Func)})
				}
			}
		}
	}
	sortViolations(out)
	return out, nil
}
