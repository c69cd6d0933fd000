package archtest

import (
	"context"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// module is the graph of the module's packages and their dependencies, listed once for every test.
var module struct {
	once  sync.Once
	graph *Graph
	root  string
	err   error
}

// loadModule lists every package of the module and its dependencies.
func loadModule(t *testing.T) (*Graph, string) {
	t.Helper()
	module.once.Do(func() {
		ctx := context.Background()
		module.root, module.err = ModuleRoot(ctx, ".")
		if module.err == nil {
			module.graph, module.err = Load(ctx, module.root, "./...")
		}
	})
	if module.err != nil {
		t.Fatal(module.err)
	}
	return module.graph, module.root
}

// TestArchitecture checks Tiler's import boundaries, layering and clock rules on the module.
func TestArchitecture(t *testing.T) {
	g, _ := loadModule(t)
	vs := CheckImports(g, ImportRules)
	cv, err := CheckClock(g, ClockRules)
	if err != nil {
		t.Fatal(err)
	}
	vs = append(vs, cv...)
	why := map[string]string{}
	for _, r := range ImportRules {
		why[r.Name] = r.Why
	}
	for _, r := range ClockRules {
		why[r.Name] = r.Why
	}
	for _, v := range vs {
		t.Errorf("%s\n\t(rule %s: %s)", v, v.Rule, why[v.Rule])
	}
	if stale := Unmatched(g, Module, ImportRules, ClockRules); len(stale) > 0 {
		t.Errorf("rules name packages that no longer exist (a moved package would escape its rules): %s", strings.Join(stale, ", "))
	}
}

// TestNoSleepInTests: no test of the module waits a fixed time (time.Sleep); tests wait on
// conditions (internal/testwait) or step a fake clock.
func TestNoSleepInTests(t *testing.T) {
	g, _ := loadModule(t)
	vs, err := CheckTestSleeps(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Errorf("%s (wait on a condition with internal/testwait, or step a fake clock)", v)
	}
}

// sourceDir writes the files (name → source) into a fresh directory and returns it.
func sourceDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// wantViolations fails the test unless the check returned exactly want, in order.
func wantViolations(t *testing.T, vs []Violation, err error, want []string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vs {
		got = append(got, v.String())
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCheckTestSleepsFinds: a Sleep in an in-package or external test file is found, a renamed
// import too; other clock reads, non-test files and excepted packages are not reported.
func TestCheckTestSleepsFinds(t *testing.T) {
	dir := sourceDir(t, map[string]string{
		"a.go":       "package p\nimport \"time\"\nfunc f() { time.Sleep(1) }\n",
		"a_test.go":  "package p\nimport \"time\"\nfunc g() { time.Sleep(time.Second); _ = time.Now() }\n",
		"x_test.go":  "package p_test\nimport tm \"time\"\nfunc h() { tm.Sleep(1) }\n",
		"ok_test.go": "package p\nimport \"time\"\nvar d = time.Second\n",
	})
	g := NewGraph([]*Package{
		{ImportPath: m("provisioner"), Dir: dir, GoFiles: []string{"a.go"}, TestGoFiles: []string{"a_test.go", "ok_test.go"}, XTestGoFiles: []string{"x_test.go"}},
		{ImportPath: m("internal/testwait"), Dir: dir, TestGoFiles: []string{"a_test.go"}},
	})
	vs, err := CheckTestSleeps(g, mod("internal/testwait"))
	wantViolations(t, vs, err, []string{
		"no-test-sleep: " + m("provisioner") + " a_test.go:3:12: time.Sleep",
		"no-test-sleep: " + m("provisioner") + " x_test.go:3:12: tm.Sleep",
	})
}

// TestPureCoversEveryPackage pins the pure set, so that narrowing it (the old shell check skipped
// forecast/backtest and api) is a visible change to this test, not a quiet edit of a pattern.
func TestPureCoversEveryPackage(t *testing.T) {
	g, _ := loadModule(t)
	var got []string
	for _, p := range g.Listed() {
		if Pure.Match(p.ImportPath) {
			got = append(got, strings.TrimPrefix(p.ImportPath, Module+"/"))
		}
	}
	for _, want := range []string{"simulator", "simulator/dra", "simulator/fgd", "simulator/gpushare", "simulator/mig",
		"simulator/simtest", "forecast", "forecast/backtest", "api", "api/catalog", "api/policy", "api/snapshot", "pricing"} {
		if !slices.Contains(got, want) {
			t.Errorf("pure package %s is not checked (checked: %v)", want, got)
		}
	}
	for _, notPure := range []string{"pricing/aws", "pricing/gcp", "pricing/metrics"} {
		if slices.Contains(got, notPure) {
			t.Errorf("%s is checked as pure, but it is a live price source", notPure)
		}
	}
}

// TestProductBinary is the acceptance check of issue #13 as a shell would run it:
// `go list -deps ./cmd/tiler` names no test framework and no harness.
func TestProductBinary(t *testing.T) {
	_, root := loadModule(t)
	cmd := exec.Command("go", "list", "-deps", "./cmd/tiler")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/tiler: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, Module+"/provisioner") {
		t.Fatalf("go list -deps ./cmd/tiler does not list the provisioner; the listing is wrong:\n%s", out)
	}
	for _, d := range deps {
		for _, bad := range []string{"testing", "net/http/httptest", Module + "/fidelity", Module + "/internal/controlplane",
			Module + "/internal/controlplane/cptest", Module + "/simulator/simtest", Module + "/internal/promtest"} {
			if d == bad {
				t.Errorf("cmd/tiler links %s", d)
			}
		}
	}
}

// graph builds a synthetic graph: each entry is a package and its direct imports.
func graph(listed map[string][]string, deps map[string][]string) *Graph {
	var pkgs []*Package
	for path, imps := range listed {
		pkgs = append(pkgs, &Package{ImportPath: path, Imports: imps})
	}
	for path, imps := range deps {
		pkgs = append(pkgs, &Package{ImportPath: path, Imports: imps, DepOnly: true})
	}
	return NewGraph(pkgs)
}

func m(rel string) string { return Module + "/" + rel }

// TestCheckImportsFindsBreaches runs the real rules on a small graph that breaks each of them,
// and on the same graph with the breaches removed.
func TestCheckImportsFindsBreaches(t *testing.T) {
	deps := map[string][]string{
		"net/http":                    nil,
		"testing":                     nil,
		"go.uber.org/zap":             nil,
		"k8s.io/client-go/rest":       {"net/http"},
		"k8s.io/client-go/kubernetes": {"k8s.io/client-go/rest"},
		"k8s.io/dynamic-resource-allocation/structured":     {"k8s.io/client-go/kubernetes"},
		"github.com/prometheus/client_golang/prometheus":    nil,
		"github.com/aws/aws-sdk-go-v2/service/ec2":          {"net/http"},
		"k8s.io/api/core/v1":                                {"net/http"},
		"sigs.k8s.io/controller-runtime/pkg/client":         {"k8s.io/client-go/rest"},
		"k8s.io/component-base/metrics":                     {"github.com/prometheus/client_golang/prometheus"},
		"k8s.io/dynamic-resource-allocation/structured/sub": {"k8s.io/component-base/metrics"},
	}
	clean := map[string][]string{
		m("api"):                          {"k8s.io/api/core/v1"},
		m("api/policy"):                   {m("api"), m("forecast")},
		m("forecast"):                     nil,
		m("forecast/backtest"):            {m("forecast")},
		m("simulator"):                    {m("api"), m("simulator/dra")},
		m("simulator/dra"):                {"k8s.io/dynamic-resource-allocation/structured/sub"},
		m("simulator/simtest"):            {m("simulator")},
		m("pricing"):                      {m("api")},
		m("pricing/aws"):                  {m("pricing"), "github.com/aws/aws-sdk-go-v2/service/ec2"},
		m("cloudprovider/aws"):            {m("cloudprovider"), m("pricing/aws")},
		m("cloudprovider"):                {m("api")},
		m("cloudprovider/sim"):            {m("cloudprovider"), m("simulator/dra"), "k8s.io/client-go/kubernetes"},
		m("provisioner"):                  {m("simulator"), m("cloudprovider"), "go.uber.org/zap"},
		m("internal/controlplane"):        {"k8s.io/client-go/rest"},
		m("internal/controlplane/cptest"): {m("internal/controlplane"), "testing"},
		m("fidelity"):                     {m("internal/controlplane"), m("simulator/simtest"), m("provisioner")},
		m("cmd/tiler"):                    {m("provisioner"), m("pricing/aws")},
		m("cmd/tiler-dev"):                {m("fidelity")},
	}
	if vs := CheckImports(graph(clean, deps), ImportRules); len(vs) > 0 {
		t.Errorf("clean graph: %v", vs)
	}

	broken := map[string][]string{}
	for k, v := range clean {
		broken[k] = slices.Clone(v)
	}
	add := func(pkg string, imps ...string) { broken[m(pkg)] = append(broken[m(pkg)], imps...) }
	add("forecast/backtest", "net/http")                                  // pure-direct
	add("simulator/dra", "k8s.io/dynamic-resource-allocation/structured") // pure-transitive, via client-go
	add("api/policy", m("simulator"))                                     // api-layer
	add("simulator", m("provisioner"))                                    // simulator-layer (and pure-transitive through it)
	add("pricing", m("cloudprovider"))                                    // pricing-layer
	add("cloudprovider", m("simulator"))                                  // cloud-layer
	add("provisioner", m("internal/controlplane"))                        // harness-users
	add("pricing/aws", m("simulator/simtest"))                            // test-helper-users
	add("cmd/tiler", m("fidelity"))                                       // product-binary
	add("forecast", "testing")                                            // no-test-machinery
	vs := CheckImports(graph(broken, deps), ImportRules)
	var got []string
	for _, v := range vs {
		got = append(got, v.String())
	}
	want := []string{
		"pure-direct: " + m("forecast/backtest") + " imports net/http",
		"pure-transitive: " + m("simulator/dra") + " depends on k8s.io/client-go/kubernetes via " + m("simulator/dra") +
			" → k8s.io/dynamic-resource-allocation/structured → k8s.io/client-go/kubernetes",
		"api-layer: " + m("api/policy") + " imports " + m("simulator"),
		"simulator-layer: " + m("simulator") + " imports " + m("provisioner"),
		"cloud-layer: " + m("cloudprovider") + " imports " + m("simulator"),
		"pricing-layer: " + m("pricing") + " imports " + m("cloudprovider"),
		"harness-users: " + m("provisioner") + " imports " + m("internal/controlplane"),
		"test-helper-users: " + m("pricing/aws") + " imports " + m("simulator/simtest"),
		"product-binary: " + m("cmd/tiler") + " depends on " + m("fidelity") + " via " + m("cmd/tiler") + " → " + m("fidelity"),
		"no-test-machinery: " + m("forecast") + " depends on testing via " + m("forecast") + " → testing",
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("missing violation %q", w)
		}
	}
	// A breach reported through the package that brings it, once, not once per package behind it.
	for _, g := range got {
		if strings.Contains(g, "k8s.io/client-go/rest") && strings.HasPrefix(g, "pure-transitive: "+m("simulator/dra")) {
			t.Errorf("reported past the first denied package: %s", g)
		}
	}
	if t.Failed() {
		t.Logf("got:\n%s", strings.Join(got, "\n"))
	}
}

func TestPatternMatch(t *testing.T) {
	for _, tc := range []struct {
		pat, path string
		want      bool
	}{
		{"a/b", "a/b", true},
		{"a/b", "a/b/c", false},
		{"a/b/...", "a/b", true},
		{"a/b/...", "a/b/c/d", true},
		{"a/b/...", "a/bc", false},
		{"net/http", "net/http/httptest", false},
	} {
		if got := Pattern(tc.pat).Match(tc.path); got != tc.want {
			t.Errorf("Pattern(%q).Match(%q) = %v, want %v", tc.pat, tc.path, got, tc.want)
		}
	}
}

func TestClockReads(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"call", `package p; import "time"; func f() time.Time { return time.Now() }`, []string{"time.Now"}},
		{"every clock function", `package p; import "time"
			func f(t time.Time) {
				_ = time.Since(t); _ = time.Until(t); time.Sleep(1); <-time.After(1); time.AfterFunc(1, nil)
				_ = time.Tick(1); _ = time.NewTicker(1); _ = time.NewTimer(1)
			}`,
			[]string{"time.Since", "time.Until", "time.Sleep", "time.After", "time.AfterFunc", "time.Tick", "time.NewTicker", "time.NewTimer"}},
		{"function value", `package p; import "time"; var now = time.Now`, []string{"time.Now"}},
		{"renamed import", `package p; import clk "time"; func f() { clk.Sleep(clk.Second) }`, []string{"clk.Sleep"}},
		{"dot import", `package p; import . "time"; var d = Second`, []string{`import . "time"`}},
		{"comments and strings", `package p
			import "time"
			// time.Now() is what we avoid.
			var s = "time.Now()"
			var d time.Duration = time.Second
			func f(t time.Time) time.Time { return t.Add(d) }`, nil},
		{"no time import", `package p; type c struct{}; func (c) Now() int { return 0 }; var time c; var x = time.Now()`, nil},
		{"blank import", `package p; import _ "time"`, nil},
		{"other package's Now", `package p; import "k8s.io/utils/clock"; func f(c clock.PassiveClock) { _ = c.Now() }`, nil},
		{"real clock default", `package p; import "k8s.io/utils/clock"; var c clock.Clock = clock.RealClock{}`, []string{"clock.RealClock"}},
		{"renamed clock import", `package p; import k "k8s.io/utils/clock"; var c = &k.RealClock{}`, []string{"k.RealClock"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reads, err := ClockReads(token.NewFileSet(), "x.go", tc.src)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range reads {
				got = append(got, r.Func)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := ClockReads(token.NewFileSet(), "bad.go", "package p; func {"); err == nil {
		t.Error("a file that does not parse passed")
	}
}

// TestCheckClockFiles checks which files of a package the clock rule reads: this build's and the
// ones build constraints exclude, not the tests.
func TestCheckClockFiles(t *testing.T) {
	dir := sourceDir(t, map[string]string{
		"a.go":       "package p\nimport \"time\"\nvar now = time.Now\n",
		"b_other.go": "//go:build plan9\n\npackage p\nimport \"time\"\nfunc f() { time.Sleep(1) }\n",
		"a_test.go":  "package p\nimport \"time\"\nvar t0 = time.Now()\n",
		"clean.go":   "package p\nimport \"time\"\nvar d = time.Second\n",
	})
	g := NewGraph([]*Package{
		{ImportPath: m("simulator/x"), Dir: dir, GoFiles: []string{"a.go", "clean.go"}, IgnoredGoFiles: []string{"a_test.go", "b_other.go"}},
		{ImportPath: m("provisioner"), Dir: dir, GoFiles: []string{"a.go"}},
	})
	vs, err := CheckClock(g, ClockRules)
	wantViolations(t, vs, err, []string{
		"pure-clock: " + m("simulator/x") + " a.go:3:11: time.Now",
		"pure-clock: " + m("simulator/x") + " b_other.go:5:12: time.Sleep",
	})
}

// TestUnmatched checks that a rule naming a package that does not exist is reported.
func TestUnmatched(t *testing.T) {
	g := graph(map[string][]string{m("simulator"): nil, m("gone/sub"): nil}, map[string][]string{"testing": nil})
	rules := []ImportRule{{Name: "r", From: mod("simulator/..."), Deny: append(mod("gone/...", "renamed"), "testing", "k8s.io/absent")}}
	got := Unmatched(g, Module, rules, []ClockRule{{Name: "c", From: mod("forecast")}})
	want := []string{m("forecast"), m("renamed")}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
