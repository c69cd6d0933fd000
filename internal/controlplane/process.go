package controlplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// process is one running component with its output captured in a log file.
type process struct {
	name    string
	binary  string
	args    []string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	done    chan struct{} // closed when the process has exited
	waitErr error         // valid after done is closed
}

// startProcess runs binary with args, appending stdout and stderr to logPath.
func startProcess(name, binary string, args []string, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s log: %w", name, err)
	}
	fmt.Fprintf(logFile, "# %s %s\n", binary, strings.Join(args, " "))
	cmd := exec.Command(binary, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, binary: binary, args: args, cmd: cmd, logPath: logPath, logFile: logFile, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exitError returns a non-nil error describing the exit when the process is no longer running.
func (p *process) exitError() error {
	select {
	case <-p.done:
		if p.waitErr != nil {
			return fmt.Errorf("%s exited: %w", p.name, p.waitErr)
		}
		return fmt.Errorf("%s exited with status 0", p.name)
	default:
		return nil
	}
}

// stop sends SIGTERM, waits up to grace for the exit, then kills the process.
func (p *process) stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// kill sends SIGKILL and waits for the exit.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// tail returns the last n lines of the log file.
func (p *process) tail(n int) string {
	return tailFile(p.logPath, n)
}

func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", path, err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// waitReady polls check every interval until it returns nil. It gives up, with the last check
// error and the tail of the process log, when the process exits or ctx ends.
func waitReady(ctx context.Context, p *process, what string, check func(context.Context) error) error {
	const interval = 100 * time.Millisecond
	var last error
	for {
		if err := p.exitError(); err != nil {
			return fmt.Errorf("waiting for %s: %w; last lines of %s:\n%s", what, err, p.logPath, p.tail(30))
		}
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		last = check(attempt)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last check: %w); last lines of %s:\n%s",
				what, ctx.Err(), last, p.logPath, p.tail(30))
		case <-time.After(interval):
		}
	}
}

// freePorts reserves n distinct free TCP ports on 127.0.0.1. All listeners are held open until
// every port is chosen, so the ports differ from each other; another process may still take one
// before the component binds it, which Start reports as a component start failure.
func freePorts(n int) ([]int, error) {
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("reserving a loopback port: %w", err)
		}
		listeners = append(listeners, l)
		addr, ok := l.Addr().(*net.TCPAddr)
		if !ok {
			return nil, errors.New("reserving a loopback port: listener address is not TCP")
		}
		ports = append(ports, addr.Port)
	}
	return ports, nil
}

// componentClient checks the health endpoints of kube-scheduler and kube-controller-manager,
// which serve a self-signed certificate generated at start-up. Only loopback URLs built by this
// package are ever requested with it.
var componentClient = &http.Client{Transport: &http.Transport{
	TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health probe of a self-signed component
	DisableKeepAlives: true,
}}

// etcdHealthy checks etcd's /health endpoint.
func (c *ControlPlane) etcdHealthy(ctx context.Context) error {
	body, err := get(ctx, http.DefaultClient, c.etcdURL+"/health")
	if err != nil {
		return err
	}
	var health struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(body, &health); err != nil {
		return fmt.Errorf("decoding etcd /health %q: %w", body, err)
	}
	if health.Health != "true" {
		return fmt.Errorf("etcd not healthy: %s", body)
	}
	return nil
}

// apiServerReady checks kube-apiserver's /readyz as the admin user.
func (c *ControlPlane) apiServerReady(ctx context.Context) error {
	client, err := rest.HTTPClientFor(c.RESTConfig())
	if err != nil {
		return fmt.Errorf("building API server client: %w", err)
	}
	defer client.CloseIdleConnections()
	_, err = get(ctx, client, c.apiServerURL+"/readyz")
	return err
}

// componentHealthy returns a check of a health endpoint (always allowed without credentials).
func componentHealthy(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := get(ctx, componentClient, url)
		return err
	}
}

// defaultServiceAccountExists checks that the serviceaccount controller has created the default
// ServiceAccount of the default namespace; until then the ServiceAccount admission plugin rejects
// pods there.
func (c *ControlPlane) defaultServiceAccountExists(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return fmt.Errorf("building clientset: %w", err)
	}
	if _, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{}); err != nil {
		return fmt.Errorf("getting ServiceAccount default/default: %w", err)
	}
	return nil
}

// get fetches url and returns the body when the status is 200.
func get(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("building request for %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// SchedulerConfigz returns kube-scheduler's /configz: the component configuration it runs with
// (profiles and plugin arguments), fetched as the admin user (the scheduler delegates
// authentication and authorization to the API server).
func (c *ControlPlane) SchedulerConfigz(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.schedulerURL+"/configz", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.secrets.token)
	resp, err := componentClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET kube-scheduler /configz: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET kube-scheduler /configz: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}
