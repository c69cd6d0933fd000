package charttest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// processKubelet plays the kubelet of a few Nodes for the pods of one namespace, with processes
// instead of containers: there is no container runtime on the test machine. For each pod the real
// kube-scheduler bound to one of its Nodes it runs the binary bin with the container's args (the
// pod's own flags, the SA kubeconfig appended, --metrics-addr moved to a free local port, each
// emptyDir mount path replaced by a directory of its own), probes the container's readiness probe
// on that port and writes the pod's Ready condition from the answer. A pod being deleted gets its
// process stopped with SIGTERM (as the kubelet sends it) and is then removed. It renews each Node's
// Lease, so the node lifecycle controller keeps the Nodes Ready.
type processKubelet struct {
	t          *testing.T
	admin      kubernetes.Interface
	ns         string
	bin        string
	kubeconfig string
	nodes      []string
	// dir holds a directory per pod (its log, its emptyDir volumes); it must outlive the checks of
	// the logs in the test's cleanup.
	dir string

	mu    sync.Mutex
	procs map[types.UID]*podProcess
}

// podProcess is the process of one pod.
type podProcess struct {
	pod    string
	rs     string // the pod's pod-template-hash: its ReplicaSet
	cmd    *exec.Cmd
	addr   string // host:port of its metrics server
	probe  string // the readiness probe's path
	log    string // its stderr and stdout
	exited chan struct{}
	ready  bool
}

// logText returns what the process logged so far.
func (p *podProcess) logText() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

func (p *podProcess) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// registerNodes creates Ready Nodes without the tiler.dev/pool label (so Tiler's Deployment may
// run there) and the capacity for a few replicas.
func (k *processKubelet) registerNodes(ctx context.Context) {
	for _, name := range k.nodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name,
			corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}}}
		if _, err := k.admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			k.t.Fatalf("registering node %s: %v", name, err)
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := k.admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			now := metav1.Now()
			capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("4Gi"),
				corev1.ResourcePods: resource.MustParse("20")}
			n.Status.Capacity, n.Status.Allocatable = capacity, capacity
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				Message: "process kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now}}
			_, err = k.admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			k.t.Fatalf("node %s status: %v", name, err)
		}
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := k.admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			var kept []corev1.Taint
			for _, taint := range n.Spec.Taints {
				if taint.Key != corev1.TaintNodeNotReady {
					kept = append(kept, taint)
				}
			}
			n.Spec.Taints = kept
			_, err = k.admin.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			k.t.Fatalf("node %s taints: %v", name, err)
		}
	}
}

// run syncs the pods every 200 ms and renews the Node Leases every 5 s until ctx ends, then stops
// every process.
func (k *processKubelet) run(ctx context.Context) {
	defer k.stopAll()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var renewed time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if time.Since(renewed) > 5*time.Second {
			k.renewLeases(ctx)
			renewed = time.Now()
		}
		if err := k.sync(ctx); err != nil && ctx.Err() == nil {
			k.t.Logf("process kubelet: %v", err)
		}
	}
}

func (k *processKubelet) renewLeases(ctx context.Context) {
	leases := k.admin.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	for _, name := range k.nodes {
		now := metav1.NewMicroTime(time.Now())
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now}}, metav1.CreateOptions{})
		} else if err == nil {
			l.Spec.RenewTime = &now
			_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		}
		if err != nil && ctx.Err() == nil {
			k.t.Logf("renewing the Lease of node %s: %v", name, err)
		}
	}
}

func (k *processKubelet) ours(node string) bool {
	for _, n := range k.nodes {
		if n == node {
			return true
		}
	}
	return false
}

func (k *processKubelet) sync(ctx context.Context) error {
	pods, err := k.admin.CoreV1().Pods(k.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !k.ours(pod.Spec.NodeName) {
			continue
		}
		k.mu.Lock()
		p := k.procs[pod.UID]
		k.mu.Unlock()
		if pod.DeletionTimestamp != nil {
			if p != nil {
				k.stop(p)
			}
			err := k.admin.CoreV1().Pods(k.ns).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0),
				Preconditions: &metav1.Preconditions{UID: &pod.UID}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("removing pod %s: %w", pod.Name, err)
			}
			continue
		}
		if p == nil {
			if p, err = k.start(pod); err != nil {
				return fmt.Errorf("starting pod %s: %w", pod.Name, err)
			}
			k.mu.Lock()
			k.procs[pod.UID] = p
			k.mu.Unlock()
		}
		ready := p.alive() && probe(ctx, "http://"+p.addr+p.probe)
		k.mu.Lock()
		p.ready = ready
		k.mu.Unlock()
		if err := k.writeStatus(ctx, pod, ready); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("status of pod %s: %w", pod.Name, err)
		}
	}
	return nil
}

// probe answers whether an HTTP GET of url answers 2xx within a second, as the kubelet's probe.
func probe(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 300
}

// writeStatus writes the pod's phase Running and its Ready condition, when they changed.
func (k *processKubelet) writeStatus(ctx context.Context, pod *corev1.Pod, ready bool) error {
	cond := func(t corev1.PodConditionType, ok bool) corev1.PodCondition {
		s := corev1.ConditionFalse
		if ok {
			s = corev1.ConditionTrue
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == t && c.Status == s {
				return c
			}
		}
		return corev1.PodCondition{Type: t, Status: s, LastTransitionTime: metav1.Now()}
	}
	want := []corev1.PodCondition{cond(corev1.PodInitialized, true), cond(corev1.PodScheduled, true),
		cond(corev1.ContainersReady, ready), cond(corev1.PodReady, ready)}
	if pod.Status.Phase == corev1.PodRunning && podReady(pod) == ready && len(pod.Status.Conditions) == len(want) {
		return nil
	}
	pod = pod.DeepCopy()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = want
	if pod.Status.StartTime == nil {
		pod.Status.StartTime = ptr.To(metav1.Now())
	}
	pod.Status.HostIP, pod.Status.PodIP = "127.0.0.1", "127.0.0.1"
	c := pod.Spec.Containers[0]
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: ready,
		Started: ptr.To(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: *pod.Status.StartTime}}}}
	_, err := k.admin.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// start runs the pod's one container as a process of bin.
func (k *processKubelet) start(pod *corev1.Pod) (*podProcess, error) {
	if len(pod.Spec.Containers) != 1 {
		return nil, fmt.Errorf("%d containers, want 1", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil {
		return nil, errors.New("no HTTP readiness probe")
	}
	// The probe's port, by name or number, is a container port; --metrics-addr must listen there.
	var probePort int32
	for _, p := range c.Ports {
		if hp := c.ReadinessProbe.HTTPGet.Port; hp.StrVal == p.Name && p.Name != "" || hp.IntVal == p.ContainerPort {
			probePort = p.ContainerPort
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	_ = l.Close()
	dir := filepath.Join(k.dir, pod.Name)
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = filepath.Join(dir, m.Name)
		if err := os.MkdirAll(mounts[m.MountPath], 0o755); err != nil {
			return nil, err
		}
	}
	var args []string
	metricsPort := ""
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--metrics-addr="); ok {
			_, metricsPort, _ = net.SplitHostPort(v)
			a = "--metrics-addr=" + addr
		}
		for path, local := range mounts {
			a = strings.ReplaceAll(a, path, local)
		}
		args = append(args, a)
	}
	if metricsPort != strconv.Itoa(int(probePort)) {
		return nil, fmt.Errorf("the readiness probe's port %d is not --metrics-addr's %q", probePort, metricsPort)
	}
	args = append(args, "--kubeconfig="+k.kubeconfig)
	logPath := filepath.Join(dir, "tiler.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(k.bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, err
	}
	p := &podProcess{pod: pod.Name, rs: pod.Labels["pod-template-hash"], cmd: cmd, addr: addr, probe: c.ReadinessProbe.HTTPGet.Path,
		log: logPath, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(p.exited)
	}()
	k.t.Logf("process kubelet: pod %s (ReplicaSet hash %s) runs as pid %d, metrics on %s", pod.Name, p.rs, cmd.Process.Pid, addr)
	return p, nil
}

// stop sends SIGTERM and waits for the process to end (SIGKILL after 30 s, the pod's default
// grace period).
func (k *processKubelet) stop(p *podProcess) {
	if p.alive() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			k.t.Errorf("pod %s: the process did not end 30 s after SIGTERM", p.pod)
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	}
}

func (k *processKubelet) stopAll() {
	k.mu.Lock()
	procs := make([]*podProcess, 0, len(k.procs))
	for _, p := range k.procs {
		procs = append(procs, p)
	}
	k.mu.Unlock()
	for _, p := range procs {
		k.stop(p)
	}
}

// processes returns the processes started so far.
func (k *processKubelet) processes() []*podProcess {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]*podProcess, 0, len(k.procs))
	for _, p := range k.procs {
		out = append(out, p)
	}
	return out
}
