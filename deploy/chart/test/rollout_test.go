package charttest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli"

	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
	"github.com/tiler-dev/tiler/internal/testwait"
)

// buildTiler builds cmd/tiler once for the test.
func buildTiler(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tiler")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/tiler")
	cmd.Dir = RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/tiler: %v\n%s", err, out)
	}
	return bin
}

// helmConfig is Helm's action configuration against the test control plane (what `helm
// --kubeconfig K -n ns` uses), storing releases as Secrets.
func helmConfig(t *testing.T, cp *controlplane.ControlPlane, ns string) *action.Configuration {
	t.Helper()
	settings := cli.New()
	settings.KubeConfig = cp.Kubeconfig()
	settings.SetNamespace(ns)
	cfg := &action.Configuration{}
	if err := cfg.Init(settings.RESTClientGetter(), ns, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the ServiceAccount with a
// token of the TokenRequest API, as a pod's projected token would.
func serviceAccountKubeconfig(t *testing.T, cp *controlplane.ControlPlane, admin kubernetes.Interface, ns, name string) string {
	t.Helper()
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of %s/%s: %v", ns, name, err)
	}
	rc := cp.RESTConfig()
	ca := rc.CAData
	if len(ca) == 0 && rc.CAFile != "" {
		if ca, err = os.ReadFile(rc.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: ca, InsecureSkipTLSVerify: len(ca) == 0}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["sa"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "sa", Namespace: ns}
	cfg.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "sa.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// rolledOut is `kubectl rollout status`'s test: the Deployment controller has seen the current
// generation and every replica is updated, ready and available, with no old one left.
func rolledOut(d *appsv1.Deployment) bool {
	want := *d.Spec.Replicas
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.ReadyReplicas == want &&
		s.AvailableReplicas == want && s.Replicas == want
}

// rolloutValues are the chart values of the test: the simulated cloud, fast boots, a cost policy.
func rolloutValues(t *testing.T, tag string) map[string]any {
	t.Helper()
	vals, err := Values("cloud=sim", "clusterName=chart-e2e", "region=", "namespace.create=false",
		"image.repository=registry.invalid/tiler", "image.tag="+tag, "sim.bootDelay=1s", "sim.deviceDelay=1s",
		"extraArgs={--batch-idle=500ms,--batch-max=2s,--gpu-trigger-delay=0s}")
	if err != nil {
		t.Fatal(err)
	}
	vals["costPolicies"] = map[string]any{"cost-policy": map[string]any{"apiVersion": "tiler.dev/v1alpha1", "kind": "CostPolicy",
		"pools": []any{map[string]any{"name": "general", "instanceFamilies": []any{"m7i", "c7i"},
			"requirements": []any{map[string]any{"key": "tiler.dev/gpu-count", "operator": "DoesNotExist"}}}}}}
	return vals
}

// TestChartInstallRollout installs the chart (cloud sim) with Helm's install action on the real
// control plane, runs each pod the real scheduler binds as a `tiler run` process (processKubelet)
// under the chart's ServiceAccount and RBAC, and requires the two-replica Deployment to roll out:
// both replicas Ready although only one leads. Then `helm upgrade` changes the image tag; the new
// ReplicaSet replaces the old pods one at a time (maxUnavailable 0: a new pod must be Ready before an
// old one stops), the Lease moves to a new pod, exactly one process leads, and that leader buys nodes
// for pending pods that the scheduler then binds. No process logs a refusal of the API server.
func TestChartInstallRollout(t *testing.T) {
	cp := cptest.Start(t, controlplane.Options{})
	bin := buildTiler(t)
	admin := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	chrt, err := loader.Load(ChartDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := helmConfig(t, cp, Namespace)
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.CreateNamespace = Release, Namespace, true
	rel, err := install.RunWithContext(ctx, chrt, rolloutValues(t, "v1"))
	if err != nil {
		t.Fatalf("helm install: %v", err)
	}
	t.Logf("helm install: release %s revision %d %s", rel.Name, rel.Version, rel.Info.Status)

	k := &processKubelet{t: t, admin: admin, ns: Namespace, bin: bin, nodes: []string{"system-a", "system-b"},
		kubeconfig: serviceAccountKubeconfig(t, cp, admin, Namespace, "tiler"), procs: map[types.UID]*podProcess{}, dir: t.TempDir()}
	k.registerNodes(ctx)
	kubeletDone := make(chan struct{})
	go func() { defer close(kubeletDone); k.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-kubeletDone
		running := 0
		for _, p := range k.processes() {
			if strings.Contains(p.logText(), "controller running") {
				running++
			}
			if log := p.logText(); strings.Contains(strings.ToLower(log), "forbidden") {
				t.Errorf("pod %s: the API server refused the ServiceAccount:\n%s", p.pod, grepLines(log, "forbidden", 5))
			} else if t.Failed() {
				t.Logf("pod %s log tail:\n%s", p.pod, tail(log, 15))
			}
		}
		// The first leader and the one after the rollout synced and ran the controller.
		if running < 2 {
			t.Errorf("%d processes logged \"controller running\", want the two leaders", running)
		}
	})

	deployments := admin.AppsV1().Deployments(Namespace)
	waitRolledOut := func(what string) *appsv1.Deployment {
		var d *appsv1.Deployment
		testwait.Until(t, 200*time.Millisecond, what, 3*time.Minute, func() bool {
			got, err := deployments.Get(ctx, Release, metav1.GetOptions{})
			if err != nil {
				return false
			}
			d = got
			return rolledOut(d)
		})
		return d
	}
	start := time.Now()
	d := waitRolledOut("the installed Deployment to roll out (2 replicas Ready)")
	t.Logf("install rolled out in %s: %+v", time.Since(start).Round(time.Millisecond), d.Status)
	firstHolder := leaseHolder(t, admin)
	if firstHolder == "" {
		t.Fatal("no replica holds the Lease tiler-provisioner")
	}
	if n := leaders(k, ""); n != 1 {
		t.Errorf("%d processes run the controller, want 1", n)
	}

	// The rollout: a new image tag, a new pod template.
	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = Namespace
	if rel, err = upgrade.RunWithContext(ctx, Release, chrt, rolloutValues(t, "v2")); err != nil {
		t.Fatalf("helm upgrade: %v", err)
	}
	start = time.Now()
	d = waitRolledOut("the upgraded Deployment to roll out")
	t.Logf("upgrade (revision %d) rolled out in %s: %+v", rel.Version, time.Since(start).Round(time.Millisecond), d.Status)
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry.invalid/tiler:v2" {
		t.Errorf("image %s after the upgrade", img)
	}
	pods, err := admin.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=tiler"})
	if err != nil {
		t.Fatal(err)
	}
	newHash := ""
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		if newHash == "" {
			newHash = p.Labels["pod-template-hash"]
		}
		if p.Labels["pod-template-hash"] != newHash || !podReady(&p) {
			t.Errorf("pod %s (hash %s) ready %v after the rollout", p.Name, p.Labels["pod-template-hash"], podReady(&p))
		}
	}
	// The old leader released the Lease when it stopped; one of the new pods took it.
	testwait.Until(t, 200*time.Millisecond, "a new pod to hold the Lease", time.Minute, func() bool {
		h := leaseHolder(t, admin)
		return h != "" && h != firstHolder && leaders(k, newHash) == 1
	})
	if n := leaders(k, ""); n != 1 {
		t.Errorf("%d live processes run the controller after the rollout, want 1", n)
	}

	// The new leader, as the chart's ServiceAccount, buys for pending pods.
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "work"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 100*time.Millisecond, "the default ServiceAccount of namespace work", time.Minute, func() bool {
		_, err := admin.CoreV1().ServiceAccounts("work").Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	for i := range 2 {
		req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app-" + string(rune('a'+i)), Namespace: "work"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: req}}}}}
		if _, err := admin.CoreV1().Pods("work").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	testwait.Until(t, 200*time.Millisecond, "the pending pods bound to nodes the new leader bought", 2*time.Minute, func() bool {
		pods, err := admin.CoreV1().Pods("work").List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 2 {
			return false
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" || k.ours(p.Spec.NodeName) {
				return false
			}
		}
		return true
	})
}

// leaseHolder returns the holder of the Lease tiler-provisioner ("" when nobody holds it).
func leaseHolder(t *testing.T, admin kubernetes.Interface) string {
	t.Helper()
	l, err := admin.CoordinationV1().Leases(Namespace).Get(context.Background(), "tiler-provisioner", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// leaders counts the live processes (of the ReplicaSet hash, when set) that started the controller.
func leaders(k *processKubelet, hash string) int {
	n := 0
	for _, p := range k.processes() {
		if p.alive() && (hash == "" || p.rs == hash) && strings.Contains(p.logText(), "controller starting") {
			n++
		}
	}
	return n
}

func grepLines(s, substr string, n int) string {
	var out []string
	for line := range strings.Lines(s) {
		if strings.Contains(strings.ToLower(line), substr) && len(out) < n {
			out = append(out, strings.TrimRight(line, "\n"))
		}
	}
	return strings.Join(out, "\n")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestChartInstallEachCloud installs the chart for aws and gcp (sim: TestChartInstallRollout) with
// Helm's install action on the real control plane, each as its own release in its own namespace:
// the API server accepts every object (its validation of the Deployment, RBAC and ServiceAccount),
// the ServiceAccount carries the cloud's identity annotation, and helm uninstall removes them.
func TestChartInstallEachCloud(t *testing.T) {
	cp := cptest.Start(t, controlplane.Options{})
	admin := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	chrt, err := loader.Load(ChartDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for cloud, annotation := range map[string]string{"aws": "eks.amazonaws.com/role-arn", "gcp": "iam.gke.io/gcp-service-account"} {
		ns, name := "tiler-"+cloud, "tiler-"+cloud
		vals, err := Values(append(cloudValues[cloud], "namespace.create=false")...)
		if err != nil {
			t.Fatal(err)
		}
		cfg := helmConfig(t, cp, ns)
		install := action.NewInstall(cfg)
		install.ReleaseName, install.Namespace, install.CreateNamespace = name, ns, true
		rel, err := install.RunWithContext(ctx, chrt, vals)
		if err != nil {
			t.Fatalf("helm install (%s): %v", cloud, err)
		}
		if rel.Info.Status != "deployed" {
			t.Errorf("%s: release %s", cloud, rel.Info.Status)
		}
		sa, err := admin.CoreV1().ServiceAccounts(ns).Get(ctx, "tiler", metav1.GetOptions{})
		if err != nil || sa.Annotations[annotation] == "" {
			t.Errorf("%s: ServiceAccount %v, %v: want the %s annotation", cloud, sa.Annotations, err, annotation)
		}
		d, err := admin.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", cloud, err)
		}
		if args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--cloud="+cloud) ||
			!strings.Contains(args, "--namespace="+ns) || !strings.Contains(args, "--leader-election-namespace="+ns) {
			t.Errorf("%s: args %s", cloud, args)
		}
		if _, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("%s: ClusterRoleBinding %s: %v", cloud, name, err)
		}
		if _, err := action.NewUninstall(cfg).Run(name); err != nil {
			t.Fatalf("helm uninstall (%s): %v", cloud, err)
		}
		if _, err := admin.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err == nil {
			t.Errorf("%s: ClusterRole %s still there after helm uninstall", cloud, name)
		}
	}
}
