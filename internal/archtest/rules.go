package archtest

// Module is Tiler's module path.
const Module = "github.com/tiler-dev/tiler"

// mod turns module-relative package patterns ("simulator/...") into import-path patterns.
func mod(rel ...string) Patterns {
	out := make(Patterns, len(rel))
	for i, r := range rel {
		out[i] = Pattern(Module + "/" + r)
	}
	return out
}

// Pure are the packages that compute on values only: the simulator, the forecaster, the shared
// vocabulary of package api, and the price-source interface with its embedded source. They do no
// I/O and read no clock, so that `tiler plan`, the controller and the tests get the same answer
// from the same input, and the tests need no servers and no waiting.
var Pure = mod("simulator/...", "forecast/...", "api/...", "pricing")

// TestHelpers are the packages that exist for tests: builders, wire-level fakes of cloud APIs,
// a Prometheus launcher, the control plane's test wrapper, the pre-scaler's fixtures, the waits
// on conditions, the scale benchmarks' heap and CPU measures. Some import package testing.
var TestHelpers = mod("simulator/simtest", "cloudprovider/aws/awstest", "cloudprovider/gcp/gcptest",
	"internal/promtest", "internal/controlplane/cptest", "provisioner/prescale/prescaletest", "internal/testwait", "internal/benchmeasure")

// Harnesses are the packages that start a local control plane: package controlplane itself and
// the fidelity campaign built on it. The developer binary (cmd/tiler-dev) and tests use them.
var Harnesses = mod("fidelity/...", "internal/controlplane/...")

// ioPackages are what a pure package must not import: Kubernetes clients, cloud SDKs, HTTP,
// logging and metrics libraries, controller-runtime.
var ioPackages = Patterns{"k8s.io/client-go/...", "github.com/aws/...", "cloud.google.com/...", "net/http",
	"go.uber.org/zap/...", "github.com/prometheus/client_golang/...", "sigs.k8s.io/controller-runtime/..."}

// ioDependencies are what a pure package must not depend on even indirectly. net/http and
// client_golang are not among them: k8s.io/api's types import net/http, and the upstream DRA
// allocator the simulator must use (k8s.io/dynamic-resource-allocation/structured) registers
// component-base metrics on client_golang. The simulator itself serves and calls nothing.
var ioDependencies = Patterns{"k8s.io/client-go/...", "github.com/aws/...", "cloud.google.com/...",
	"go.uber.org/zap/...", "sigs.k8s.io/controller-runtime/..."}

// testMachinery is what no product package and no product binary may link.
var testMachinery = Patterns{"testing", "net/http/httptest"}

// ImportRules are Tiler's import boundaries and layering.
var ImportRules = []ImportRule{
	{
		Name: "pure-direct",
		Why:  "the pure packages do no I/O: no Kubernetes client, cloud SDK, HTTP, zap or Prometheus client",
		From: Pure, Deny: ioPackages,
	},
	{
		Name: "pure-transitive",
		Why:  "the pure packages do not link Kubernetes clients, cloud SDKs, zap or controller-runtime even indirectly",
		From: Pure, Deny: ioDependencies, Transitive: true,
	},
	{
		Name: "api-layer",
		Why:  "api is the vocabulary every layer shares; it builds only on itself and on forecast, whose WorkloadForecast spec api/policy embeds",
		From: mod("api/..."), Deny: mod("..."), Allow: mod("api/...", "forecast"),
	},
	{
		Name: "simulator-layer",
		Why:  "the simulator is below the controller, the clouds, the price sources, the binaries and the harnesses",
		From: mod("simulator/..."),
		Deny: mod("provisioner/...", "cloudprovider/...", "pricing/...", "cmd/...", "fidelity/...", "internal/..."),
	},
	{
		Name: "cloud-layer",
		Why:  "clouds and price sources sit beside the simulator, not above it: they share api, never the planner or the controller",
		From: mod("cloudprovider/...", "pricing/..."), Deny: mod("simulator", "provisioner/..."),
	},
	{
		Name: "pricing-layer",
		Why:  "price sources sit below the cloud providers, which read prices to build catalogs; a price source never launches or lists instances",
		From: mod("pricing/..."), Deny: mod("cloudprovider/..."),
	},
	{
		Name: "harness-users",
		Why: "only the binaries and tests start control planes (and product-binary keeps them out of cmd/tiler); " +
			"fidelity is itself a harness built on controlplane, and cptest wraps it for tests",
		From: mod("..."), Except: append(mod("cmd/...", "fidelity/..."), mod("internal/controlplane/...")...),
		Deny: Harnesses,
	},
	{
		Name: "test-helper-users",
		Why:  "test helpers are imported by tests, by each other and by the fidelity harness, whose scenarios build on simtest",
		From: mod("..."), Except: append(append(Patterns{}, TestHelpers...), mod("fidelity/...")...),
		Deny: TestHelpers,
	},
	{
		Name: "no-test-machinery",
		Why:  "package testing (and httptest) belongs to tests and test helpers; a product package that links it drags it into the binaries",
		From: mod("..."), Except: TestHelpers, Deny: testMachinery, Transitive: true,
	},
	{
		Name: "replay-direct",
		Why: "the replay drives provisioner.Decide, so it links what package provisioner links, but it does no I/O of its own: " +
			"no Kubernetes client, cloud SDK, HTTP, zap or Prometheus client, no cloud provider",
		From: mod("replay/..."), Deny: append(append(Patterns{}, ioPackages...), mod("cloudprovider/...", "pricing/...", "promsource/...")...),
	},
	{
		Name: "product-binary",
		Why: "the controller image carries neither the test framework, the test helpers, nor the code that starts etcd; " +
			"those belong to cmd/tiler-dev",
		From: mod("cmd/tiler"),
		Deny: append(append(append(Patterns{}, testMachinery...), Harnesses...), TestHelpers...), Transitive: true,
	},
}

// ClockRules keep the wall clock out of the pure packages.
var ClockRules = []ClockRule{
	{
		Name: "pure-clock",
		Why:  "the pure packages take time as data (a now argument or an injected clock): reproducible plans, tests without waiting",
		From: Pure,
	},
	{
		Name: "replay-clock",
		Why:  "a replay runs on its virtual clock: the same workload gives the same report, in seconds for a day",
		From: mod("replay/..."),
	},
}
