package controlplane

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// DirEnv names the environment variable that points at the control-plane cache directory; the
// binaries live in its bin subdirectory. The Makefile exports it.
const DirEnv = "TILER_CONTROLPLANE_DIR"

// KubernetesVersion is the Kubernetes release the control-plane binaries are built from.
const KubernetesVersion = "v1.37.2"

// Binary names, as found in the bin directory.
const (
	// EtcdBinary is the etcd server.
	EtcdBinary = "etcd"
	// APIServerBinary is kube-apiserver.
	APIServerBinary = "kube-apiserver"
	// SchedulerBinary is kube-scheduler.
	SchedulerBinary = "kube-scheduler"
	// ControllerManagerBinary is kube-controller-manager.
	ControllerManagerBinary = "kube-controller-manager"
)

// Binaries lists every binary Start needs, in start order.
var Binaries = []string{EtcdBinary, APIServerBinary, SchedulerBinary, ControllerManagerBinary}

// Default values used when the matching Options field is zero.
const (
	// DefaultStartTimeout bounds how long Start waits for every component to become ready.
	DefaultStartTimeout = 2 * time.Minute
	// DefaultServiceClusterIPRange is the service CIDR given to kube-apiserver and the controllers.
	DefaultServiceClusterIPRange = "10.96.0.0/16"
	// AdminUser is the user name of the static admin token; it is in the group system:masters.
	AdminUser = "tiler-admin"
)

// Options configures Start. The zero value is a working configuration.
type Options struct {
	// BinDir holds the binaries. Default: $TILER_CONTROLPLANE_DIR/bin, or
	// $HOME/.cache/tiler/controlplane/v1.37.2/bin when the variable is unset.
	BinDir string
	// TempDir is the parent of the per-run directory (etcd data, certificates, kubeconfig, logs).
	// Default: os.TempDir().
	TempDir string
	// LogDir, when set, receives the component logs instead of the per-run directory, so they
	// survive Stop. It is created if missing.
	LogDir string
	// StartTimeout bounds the whole start-up. Default: DefaultStartTimeout.
	StartTimeout time.Duration
	// ServiceClusterIPRange is the service CIDR. Default: DefaultServiceClusterIPRange.
	ServiceClusterIPRange string
	// FeatureGates are passed as --feature-gates to kube-apiserver, kube-scheduler and
	// kube-controller-manager. Every DRA gate the GPU work needs is on by default in v1.37.
	FeatureGates map[string]bool
	// RuntimeConfig is passed as --runtime-config to kube-apiserver: API group versions to serve
	// or not ("scheduling.k8s.io/v1beta1": true serves the beta Workload and PodGroup API, which
	// beta gates such as GenericWorkload need since beta APIs are off by default).
	RuntimeConfig map[string]bool
	// Verbosity is the klog --v level of the Kubernetes components. Default 0 (the flag is omitted).
	Verbosity int
	// Logf, when set, receives one line per start-up step with the time it took.
	Logf func(format string, args ...any)
	// SchedulerConfig, when set, is a KubeSchedulerConfiguration (YAML or JSON) kube-scheduler runs
	// with (--config), e.g. deploy/scheduler/gpu-mostallocated.yaml. Its clientConnection.kubeconfig
	// is replaced by the control plane's admin kubeconfig, and leader election stays off.
	SchedulerConfig []byte
	// EtcdArgs, APIServerArgs, SchedulerArgs and ControllerManagerArgs are appended to the
	// generated command lines; a later flag overrides an earlier one of the same name.
	EtcdArgs              []string
	APIServerArgs         []string
	SchedulerArgs         []string
	ControllerManagerArgs []string
}

// DefaultBinDir returns the directory Start looks in when Options.BinDir is empty.
func DefaultBinDir() string {
	if d := os.Getenv(DirEnv); d != "" {
		return filepath.Join(d, "bin")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "tiler", "controlplane", KubernetesVersion, "bin")
}

// ErrMissingBinary is wrapped by the error Start and CheckBinaries return when a binary is absent.
var ErrMissingBinary = errors.New("control-plane binary missing")

// CheckBinaries reports whether every binary is present and executable in binDir (DefaultBinDir
// when empty). The error names the first missing binary and says how to build it.
func CheckBinaries(binDir string) error {
	if binDir == "" {
		binDir = DefaultBinDir()
	}
	for _, name := range Binaries {
		path := filepath.Join(binDir, name)
		st, err := os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%w: %s not found (run `make controlplane` to build the control plane into %s, or set %s): %w",
				ErrMissingBinary, path, binDir, DirEnv, err)
		case err != nil:
			return fmt.Errorf("checking %s: %w", path, err)
		case st.IsDir() || st.Mode().Perm()&0o111 == 0:
			return fmt.Errorf("%w: %s is not an executable file (run `make controlplane`)", ErrMissingBinary, path)
		}
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.BinDir == "" {
		o.BinDir = DefaultBinDir()
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.ServiceClusterIPRange == "" {
		o.ServiceClusterIPRange = DefaultServiceClusterIPRange
	}
	return o
}

// featureGateFlag renders FeatureGates as a --feature-gates flag, or returns nil when empty.
func (o Options) featureGateFlag() []string {
	if len(o.FeatureGates) == 0 {
		return nil
	}
	names := make([]string, 0, len(o.FeatureGates))
	for name := range o.FeatureGates {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s=%t", name, o.FeatureGates[name])
	}
	return []string{"--feature-gates=" + strings.Join(parts, ",")}
}

// runtimeConfigFlag renders RuntimeConfig as a --runtime-config flag, or returns nil when empty.
func (o Options) runtimeConfigFlag() []string {
	if len(o.RuntimeConfig) == 0 {
		return nil
	}
	names := make([]string, 0, len(o.RuntimeConfig))
	for name := range o.RuntimeConfig {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s=%t", name, o.RuntimeConfig[name])
	}
	return []string{"--runtime-config=" + strings.Join(parts, ",")}
}

// klogFlags returns the shared logging flags of the Kubernetes components.
func (o Options) klogFlags() []string {
	if o.Verbosity <= 0 {
		return nil
	}
	return []string{fmt.Sprintf("--v=%d", o.Verbosity)}
}
