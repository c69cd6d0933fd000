package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// ControlPlane is a running etcd, kube-apiserver, kube-scheduler and kube-controller-manager.
// It is safe for concurrent use; Stop may be called more than once.
type ControlPlane struct {
	opts       Options
	dir        string // per-run directory, removed by Stop
	logDir     string
	kubeconfig string
	secrets    *secrets

	etcdURL      string
	apiServerURL string
	schedulerURL string // https base URL of kube-scheduler's secure port
	kcmURL       string // https base URL of kube-controller-manager's secure port

	mu        sync.Mutex
	processes []*process // in start order
	stopped   bool
}

// Start launches the control plane and returns once every component is ready: etcd reports
// healthy, kube-apiserver's /readyz passes, kube-scheduler's /readyz and kube-controller-manager's
// /healthz pass, and the default namespace has its default ServiceAccount (so pods can be
// created). On error everything started so far is stopped and the per-run directory removed; the
// error includes the tail of the failing component's log. When another process took one of the
// chosen ports first, Start tries again with new ports, up to three times in all.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	opts = opts.withDefaults()
	if err := CheckBinaries(opts.BinDir); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	const attempts = 3
	for attempt := 1; ; attempt++ {
		cp, err := startOnce(ctx, opts)
		if err == nil {
			return cp, nil
		}
		if !errors.Is(err, errPortInUse) || attempt == attempts || ctx.Err() != nil {
			return nil, err
		}
		if opts.Logf != nil {
			opts.Logf("controlplane: retrying with new ports: %v", err)
		}
	}
}

// errPortInUse marks a start-up that failed because a component could not bind its port.
var errPortInUse = errors.New("a control-plane port was taken by another process")

func startOnce(ctx context.Context, opts Options) (*ControlPlane, error) {
	dir, err := os.MkdirTemp(opts.TempDir, "tiler-controlplane-")
	if err != nil {
		return nil, fmt.Errorf("creating control-plane directory: %w", err)
	}
	cp := &ControlPlane{opts: opts, dir: dir, logDir: filepath.Join(dir, "logs")}
	if opts.LogDir != "" {
		cp.logDir = opts.LogDir
	}
	err = cp.start(ctx)
	if err == nil {
		return cp, nil
	}
	portInUse := cp.logsMention("address already in use")
	cp.Stop()
	if portInUse {
		err = fmt.Errorf("%w: %w", errPortInUse, err)
	}
	if opts.LogDir != "" {
		return nil, fmt.Errorf("starting control plane (logs in %s): %w", opts.LogDir, err)
	}
	return nil, fmt.Errorf("starting control plane: %w", err)
}

func (c *ControlPlane) start(ctx context.Context) error {
	for _, d := range []string{c.logDir, filepath.Join(c.dir, "pki"), filepath.Join(c.dir, "etcd")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	secrets, err := generateSecrets(filepath.Join(c.dir, "pki"))
	if err != nil {
		return fmt.Errorf("generating certificates: %w", err)
	}
	c.secrets = secrets
	// etcd client, etcd peer, apiserver, scheduler, controller-manager
	ports, err := freePorts(5)
	if err != nil {
		return err
	}
	c.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	c.apiServerURL = fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	c.schedulerURL = fmt.Sprintf("https://127.0.0.1:%d", ports[3])
	c.kcmURL = fmt.Sprintf("https://127.0.0.1:%d", ports[4])
	c.kubeconfig = filepath.Join(c.dir, "kubeconfig")
	if err := c.secrets.writeKubeconfig(c.kubeconfig, c.apiServerURL); err != nil {
		return err
	}

	etcd, err := c.launch(EtcdBinary, c.etcdArgs(ports[0], ports[1]))
	if err != nil {
		return err
	}
	if err := c.wait(ctx, etcd, "etcd /health", c.etcdHealthy); err != nil {
		return err
	}
	apiserver, err := c.launch(APIServerBinary, c.apiServerArgs(ports[2]))
	if err != nil {
		return err
	}
	if err := c.wait(ctx, apiserver, "kube-apiserver /readyz", c.apiServerReady); err != nil {
		return err
	}
	// The scheduler and the controller manager start together; both only need the API server.
	schedArgs, err := c.schedulerArgs(ports[3])
	if err != nil {
		return err
	}
	scheduler, err := c.launch(SchedulerBinary, schedArgs)
	if err != nil {
		return err
	}
	kcm, err := c.launch(ControllerManagerBinary, c.controllerManagerArgs(ports[4]))
	if err != nil {
		return err
	}
	if err := c.wait(ctx, scheduler, "kube-scheduler /readyz", componentHealthy(c.schedulerURL+"/readyz")); err != nil {
		return err
	}
	if err := c.wait(ctx, kcm, "kube-controller-manager /healthz", componentHealthy(c.kcmURL+"/healthz")); err != nil {
		return err
	}
	return c.wait(ctx, kcm, "ServiceAccount default/default", c.defaultServiceAccountExists)
}

// wait runs waitReady and reports the step through Options.Logf.
func (c *ControlPlane) wait(ctx context.Context, p *process, what string, check func(context.Context) error) error {
	start := time.Now()
	err := waitReady(ctx, p, what, check)
	if err == nil && c.opts.Logf != nil {
		c.opts.Logf("controlplane: %s ready after %s", what, time.Since(start).Round(time.Millisecond))
	}
	return err
}

// launch starts one component with its log in the log directory and remembers it for Stop.
func (c *ControlPlane) launch(name string, args []string) (*process, error) {
	p, err := startProcess(name, filepath.Join(c.opts.BinDir, name), args, filepath.Join(c.logDir, name+".log"))
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.processes = append(c.processes, p)
	return p, nil
}

// Stop terminates the components in reverse start order (SIGTERM, then SIGKILL after a short
// grace period) and removes the per-run directory, including the logs unless Options.LogDir was
// set. It is safe to call more than once.
func (c *ControlPlane) Stop() {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	c.stopped = true
	procs := c.processes
	c.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].stop(5 * time.Second)
	}
	_ = os.RemoveAll(c.dir)
}

// RestartAPIServer stops kube-apiserver and etcd and starts them again on the same ports, with
// the same data directory and certificates, as a control-plane upgrade or a crashed host would:
// every client's connections and watches drop, and the stored objects survive. With kill the
// two get SIGKILL (a crash); otherwise SIGTERM and a grace period. kube-scheduler and
// kube-controller-manager keep running and reconnect by themselves. It returns once etcd is
// healthy and kube-apiserver ready again; down, when set, is called while both are stopped.
func (c *ControlPlane) RestartAPIServer(ctx context.Context, kill bool, down func()) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return errors.New("restarting the API server: the control plane is stopped")
	}
	etcd, apiserver := -1, -1
	for i, p := range c.processes {
		switch p.name {
		case EtcdBinary:
			etcd = i
		case APIServerBinary:
			apiserver = i
		}
	}
	c.mu.Unlock()
	if etcd < 0 || apiserver < 0 {
		return errors.New("restarting the API server: etcd or kube-apiserver was never started")
	}
	for _, i := range []int{apiserver, etcd} {
		if kill {
			c.processes[i].kill()
		} else {
			c.processes[i].stop(5 * time.Second)
		}
	}
	if down != nil {
		down()
	}
	for _, step := range []struct {
		i     int
		what  string
		check func(context.Context) error
	}{{etcd, "etcd /health", c.etcdHealthy}, {apiserver, "kube-apiserver /readyz", c.apiServerReady}} {
		old := c.processes[step.i]
		p, err := startProcess(old.name, old.binary, old.args, old.logPath)
		if err != nil {
			return fmt.Errorf("restarting %s: %w", old.name, err)
		}
		c.mu.Lock()
		c.processes[step.i] = p
		c.mu.Unlock()
		if err := c.wait(ctx, p, step.what+" after the restart", step.check); err != nil {
			return err
		}
	}
	return nil
}

// RESTConfig returns a new client configuration for the admin user (group system:masters).
func (c *ControlPlane) RESTConfig() *rest.Config {
	return c.secrets.restConfig(c.apiServerURL)
}

// Kubeconfig returns the path of a kubeconfig file for the admin user.
func (c *ControlPlane) Kubeconfig() string { return c.kubeconfig }

// LogDir returns the directory holding etcd.log, kube-apiserver.log, kube-scheduler.log and
// kube-controller-manager.log.
func (c *ControlPlane) LogDir() string { return c.logDir }

// APIServerURL returns the https URL of kube-apiserver.
func (c *ControlPlane) APIServerURL() string { return c.apiServerURL }

// EtcdURL returns the http client URL of etcd.
func (c *ControlPlane) EtcdURL() string { return c.etcdURL }

// Dir returns the per-run directory (certificates, etcd data, kubeconfig) that Stop removes.
func (c *ControlPlane) Dir() string { return c.dir }

// LogTail returns the last n lines of every component log, each under a header naming the file,
// for a failing test to print.
func (c *ControlPlane) LogTail(n int) string {
	entries, err := os.ReadDir(c.logDir)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", c.logDir, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".log") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		path := filepath.Join(c.logDir, name)
		fmt.Fprintf(&b, "==> %s <==\n%s\n", path, tailFile(path, n))
	}
	return b.String()
}

// logsMention reports whether any component log contains text.
func (c *ControlPlane) logsMention(text string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.processes {
		if data, err := os.ReadFile(p.logPath); err == nil && strings.Contains(string(data), text) {
			return true
		}
	}
	return false
}

// Err returns a non-nil error naming every component that has exited. Before Stop, any exit is
// a crash; a test can check Err at its end to tell a dead component from a slow one.
func (c *ControlPlane) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, p := range c.processes {
		if err := p.exitError(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
