package main

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	awscloud "github.com/tiler-dev/tiler/cloudprovider/aws"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
	"github.com/tiler-dev/tiler/internal/manifest"
)

// deployManifest is the manifest of `tiler run` in a cluster.
var deployManifest = filepath.Join("..", "..", "deploy", "tiler.yaml")

// TestDeployManifest checks the Deployment of deploy/tiler.yaml against `tiler run` itself: its
// args parse with run's flags into a valid configuration with a complete AWS configuration and
// leader election on; the namespaces it uses are the Role's; its probes hit the metrics server on
// the container's metrics port and pass on a replica that is not leading (a standby that fails
// its readiness probe would stall every rolling update); the Service reaches that port.
func TestDeployManifest(t *testing.T) {
	objs := decodeDeployManifest(t)
	dep := only[*appsv1.Deployment](t, objs)
	svc := only[*corev1.Service](t, objs)
	role := only[*rbacv1.Role](t, objs)
	sa := only[*corev1.ServiceAccount](t, objs)
	if len(dep.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("the Deployment has %d containers, want 1", len(dep.Spec.Template.Spec.Containers))
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "run" {
		t.Fatalf("container args %q do not start with run", c.Args)
	}
	if _, err := awsProviderConfig(t, c.Args[1:]); err == nil {
		t.Error("the AWS configuration of the unfilled placeholders is valid: `tiler run` would start with them")
	}
	args := fillPlaceholders(t, c.Args[1:])
	cfg, rf := runConfig(t, args...)
	if rf.cloud != "aws" {
		t.Errorf("--cloud %s, want aws", rf.cloud)
	}
	if _, err := awsProviderConfig(t, args); err != nil {
		t.Errorf("AWS configuration of the args with example values: %v", err)
	}
	if !rf.leaderElect || dep.Spec.Replicas == nil || *dep.Spec.Replicas < 2 {
		t.Errorf("leader election %v with %v replicas, want on with at least 2", rf.leaderElect, dep.Spec.Replicas)
	}
	for what, ns := range map[string]string{"--namespace": cfg.Namespace, "--leader-election-namespace": rf.leaseNamespace,
		"the Deployment": dep.Namespace, "the ServiceAccount": sa.Namespace} {
		if ns != role.Namespace {
			t.Errorf("%s is in namespace %s, the Role in %s", what, ns, role.Namespace)
		}
	}
	if got := dep.Spec.Template.Spec.ServiceAccountName; got != sa.Name {
		t.Errorf("serviceAccountName %q, want %q", got, sa.Name)
	}
	checkSecurityContext(t, dep.Spec.Template.Spec, c)
	port := metricsPort(t, rf.metricsAddr, c)
	checkProbes(t, c, port)
	if len(svc.Spec.Ports) != 1 || !refersTo(svc.Spec.Ports[0].TargetPort, port) || svc.Spec.Ports[0].Port != port.ContainerPort {
		t.Errorf("Service ports %+v do not reach the metrics port %+v", svc.Spec.Ports, port)
	}
	for k, v := range svc.Spec.Selector {
		if dep.Spec.Template.Labels[k] != v {
			t.Errorf("Service selector %s=%s does not match the pod labels %v", k, v, dep.Spec.Template.Labels)
		}
	}
}

// TestDeployLeaderElectionRBAC runs the leader election of `tiler run --leader-elect` as the
// manifest's service account, with only its RBAC, on a real control plane: the replica acquires
// the Lease, and releases it on shutdown, without a 403.
func TestDeployLeaderElectionRBAC(t *testing.T) {
	cp := cptest.Start(t, controlplane.Options{})
	admin := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	objs := decodeDeployManifest(t)
	if err := manifest.ApplyRBAC(context.Background(), admin, objs); err != nil {
		t.Fatalf("%s: %v", deployManifest, err)
	}
	sa := only[*corev1.ServiceAccount](t, objs)
	denied := &manifest.Denied{}
	c := manifest.Impersonate(cp.RESTConfig(), sa.Namespace, sa.Name, denied.Wrap)
	probe := kubernetes.NewForConfigOrDie(manifest.Impersonate(cp.RESTConfig(), sa.Namespace, sa.Name, nil))
	// The authorizer reads new bindings through an informer.
	waitFor(t, 30*time.Second, "the RBAC bindings to take effect", func() bool {
		_, err := probe.CoreV1().ConfigMaps(sa.Namespace).List(context.Background(), metav1.ListOptions{Limit: 1})
		return err == nil
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	led := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- runWithLeaderElection(ctx, kubernetes.NewForConfigOrDie(c), sa.Namespace, defaultLeaderTiming, func(ctx context.Context) error {
			close(led)
			<-ctx.Done()
			return nil
		}, zaptest.NewLogger(t), nil)
	}()
	select {
	case <-led:
	case err := <-done:
		t.Fatalf("leader election ended before leading: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not leading after 30s")
	}
	lease, err := admin.CoordinationV1().Leases(sa.Namespace).Get(context.Background(), "tiler-provisioner", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Fatalf("Lease tiler-provisioner: %+v, %v", lease, err)
	}
	cancel()
	<-done
	lease, err = admin.CoordinationV1().Leases(sa.Namespace).Get(context.Background(), "tiler-provisioner", metav1.GetOptions{})
	if err != nil || (lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "") {
		t.Errorf("the Lease was not released on shutdown: %+v, %v", lease.Spec, err)
	}
	if reqs := denied.List(); len(reqs) > 0 {
		t.Errorf("the API server refused %s %d distinct requests:\n  %s",
			manifest.User(sa.Namespace, sa.Name), len(reqs), strings.Join(reqs, "\n  "))
	}
}

// placeholderExamples are well-formed values for the manifest's <PLACEHOLDER>s, so that the
// args can be validated as a user's would be.
var placeholderExamples = map[string]string{
	"<REGION>":                   "us-east-1",
	"<CLUSTER>":                  "prod",
	"<ZONE_A>":                   "us-east-1a",
	"<ZONE_B>":                   "us-east-1b",
	"<SUBNET_A>":                 "subnet-0aaa1111bbb222333",
	"<SUBNET_B>":                 "subnet-0abc1234def567890",
	"<CLUSTER_ENDPOINT_URL>":     "https://ABCDEF0123456789.gr7.us-east-1.eks.amazonaws.com",
	"<BASE64_CA_BUNDLE>":         "Y2VydGlmaWNhdGVBdXRob3JpdHk=",
	"<SERVICE_CIDR>":             "10.100.0.0/16",
	"<AL2023_EKS_AMI_ID>":        "ami-0cpu000000000000a",
	"<AL2023_EKS_NVIDIA_AMI_ID>": "ami-0gpu000000000000b",
	"<NODE_INSTANCE_PROFILE>":    "tiler-node",
	"<NODE_SECURITY_GROUP_ID>":   "sg-0cluster000000000",
}

var placeholder = regexp.MustCompile(`<[A-Z0-9_]+>`)

// fillPlaceholders replaces each <PLACEHOLDER> in args by its example value.
func fillPlaceholders(t *testing.T, args []string) []string {
	t.Helper()
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = placeholder.ReplaceAllStringFunc(a, func(p string) string {
			v, ok := placeholderExamples[p]
			if !ok {
				t.Fatalf("placeholder %s in %q has no example value in placeholderExamples", p, a)
			}
			return v
		})
	}
	return out
}

// awsProviderConfig is the EC2 provider's configuration of `tiler run` args, validated as
// awscloud.NewProvider does before the first API call.
func awsProviderConfig(t *testing.T, args []string) (awscloud.Config, error) {
	t.Helper()
	cfg, rf := runConfig(t, args...)
	c, err := awsConfig(rf, cfg)
	if err != nil {
		return c, err
	}
	return c, c.ValidateProvider()
}

func checkSecurityContext(t *testing.T, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	nonRoot := (pod.SecurityContext != nil && pod.SecurityContext.RunAsNonRoot != nil && *pod.SecurityContext.RunAsNonRoot) ||
		(c.SecurityContext != nil && c.SecurityContext.RunAsNonRoot != nil && *c.SecurityContext.RunAsNonRoot)
	sc := c.SecurityContext
	if !nonRoot || sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("the container must run as non-root with a read-only root filesystem and no privilege escalation: pod %+v, container %+v",
			pod.SecurityContext, sc)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v: want CPU and memory requests and a memory limit", c.Resources)
	}
}

// metricsPort returns the container port --metrics-addr listens on.
func metricsPort(t *testing.T, addr string, c corev1.Container) corev1.ContainerPort {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("--metrics-addr %q: %v", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("--metrics-addr %q: %v", addr, err)
	}
	for _, cp := range c.Ports {
		if int(cp.ContainerPort) == n {
			return cp
		}
	}
	t.Fatalf("no container port is --metrics-addr's %d: %+v", n, c.Ports)
	return corev1.ContainerPort{}
}

// checkProbes serves the metrics endpoints of a healthy replica that is not leading (as serveHTTP does)
// and requires the liveness and readiness probes to target the metrics port and to pass there.
func checkProbes(t *testing.T, c corev1.Container, port corev1.ContainerPort) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A healthy standby: not leading, its last Lease call answered.
	standby := &readiness{}
	standby.leaseSeen()
	go serveHTTP(ctx, addr, prometheus.NewRegistry(), standby, zaptest.NewLogger(t))
	waitFor(t, 5*time.Second, "the metrics server", func() bool {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			_ = conn.Close()
		}
		return err == nil
	})
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("no HTTP %s probe", name)
			continue
		}
		if !refersTo(p.HTTPGet.Port, port) {
			t.Errorf("%s probe port %s is not the metrics port %+v", name, p.HTTPGet.Port.String(), port)
		}
		resp, err := http.Get("http://" + addr + p.HTTPGet.Path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s probe %s answers %s on a replica that is not leading", name, p.HTTPGet.Path, resp.Status)
		}
	}
}

// refersTo reports whether a port reference (by name or number) is the container port.
func refersTo(ref intstr.IntOrString, port corev1.ContainerPort) bool {
	if ref.Type == intstr.String {
		return ref.StrVal != "" && ref.StrVal == port.Name
	}
	return ref.IntVal == port.ContainerPort
}

// only returns the one object of type T in objs.
func only[T kruntime.Object](t *testing.T, objs []kruntime.Object) T {
	t.Helper()
	var found []T
	for _, o := range objs {
		if v, ok := o.(T); ok {
			found = append(found, v)
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("%s has %d objects of type %T, want 1", deployManifest, len(found), zero)
	}
	return found[0]
}

// decodeDeployManifest decodes every document of deploy/tiler.yaml into a typed object.
func decodeDeployManifest(t *testing.T) []kruntime.Object {
	t.Helper()
	objs, err := manifest.Decode(deployManifest)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}
