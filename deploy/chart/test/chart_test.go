package charttest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/internal/manifest"
)

// cloudValues are values of each cloud that `tiler run` accepts in substance (the aws default keeps
// its <PLACEHOLDER>s: cmd/tiler/deploy_test.go fills them in and parses the args).
var cloudValues = map[string][]string{
	"aws": nil,
	"gcp": {"cloud=gcp", "region=europe-west4", "gcp.project=acme-ml", "gcp.serviceAccount=tiler@acme-ml.iam.gserviceaccount.com",
		"gcp.subnetwork=regions/europe-west4/subnetworks/default"},
	"sim": {"cloud=sim", "region=", "clusterName=trial"},
}

// TestDeployManifestIsRendering: deploy/tiler.yaml is the chart's rendering of its default values.
func TestDeployManifestIsRendering(t *testing.T) {
	want, err := DeployManifest()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(DeployManifestPath())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("deploy/tiler.yaml is not the chart's rendering of its default values: run `make chart`")
	}
}

// TestChartCRDs: every CRD of deploy/crds is in the chart's crds/ directory, unchanged, so that
// `helm install` creates it before the templates.
func TestChartCRDs(t *testing.T) {
	pairs, err := CRDPairs()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pairs {
		src, err := os.ReadFile(p[0])
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.ReadFile(p[1])
		if err != nil || string(src) != string(dst) {
			t.Errorf("%s is not in the chart as %s (run `make chart`): %v", p[0], p[1], err)
		}
	}
	t.Logf("%d CRDs in deploy/crds", len(pairs))
}

// TestLint runs the chart's lint action (helm lint --strict) for each cloud.
func TestLint(t *testing.T) {
	for cloud, set := range cloudValues {
		vals, err := Values(set...)
		if err != nil {
			t.Fatal(err)
		}
		if msgs := Lint(vals); len(msgs) > 0 {
			t.Errorf("helm lint --strict (%s): %d findings:\n  %s", cloud, len(msgs), strings.Join(msgs, "\n  "))
		}
	}
	vals, _ := Values("cloud=foo")
	if msgs := Lint(vals); !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, "cloud") }) {
		t.Errorf("helm lint with cloud=foo: %q, want a finding naming cloud", msgs)
	}
}

// rendered is a chart rendering decoded: the typed objects of client-go's scheme and the kinds of
// every document (a ServiceMonitor is not in the scheme).
type rendered struct {
	objs  []kruntime.Object
	kinds []string
}

func render(t *testing.T, set ...string) rendered {
	t.Helper()
	vals, err := Values(set...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Render(Namespace, vals)
	if err != nil {
		t.Fatalf("rendering with %q: %v", set, err)
	}
	var r rendered
	var typed []string
	for _, doc := range strings.Split(m, "\n---\n") {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("rendering with %q: %v in\n%s", set, err, doc)
		}
		if u.Object == nil {
			continue
		}
		r.kinds = append(r.kinds, u.GetKind())
		if scheme.Scheme.Recognizes(u.GroupVersionKind()) {
			typed = append(typed, doc)
		}
	}
	path := filepath.Join(t.TempDir(), "rendered.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(typed, "\n---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if r.objs, err = manifest.Decode(path); err != nil {
		t.Fatal(err)
	}
	return r
}

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
		t.Fatalf("%d objects of type %T, want 1", len(found), zero)
	}
	return found[0]
}

func all[T kruntime.Object](objs []kruntime.Object) []T {
	var found []T
	for _, o := range objs {
		if v, ok := o.(T); ok {
			found = append(found, v)
		}
	}
	return found
}

// TestTemplate renders each cloud and checks what differs between them: the ServiceAccount's
// cloud identity annotation, the cloud's flags, the simulated cloud's extra RBAC and state volume;
// and what the values switch: replicas, the namespace object, the ServiceMonitor, cost policies.
func TestTemplate(t *testing.T) {
	for cloud, set := range cloudValues {
		t.Run(cloud, func(t *testing.T) {
			r := render(t, set...)
			sa := only[*corev1.ServiceAccount](t, r.objs)
			dep := only[*appsv1.Deployment](t, r.objs)
			args := dep.Spec.Template.Spec.Containers[0].Args
			if !slices.Contains(args, "--cloud="+cloud) || !slices.Contains(args, "--leader-elect=true") {
				t.Errorf("args %q lack --cloud=%s or --leader-elect=true", args, cloud)
			}
			if *dep.Spec.Replicas != 2 {
				t.Errorf("replicas %d, want the default 2", *dep.Spec.Replicas)
			}
			if p := dep.Spec.Template.Spec.Containers[0].ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
				t.Errorf("readiness probe %+v, want /readyz", p)
			}
			wantAnnotation := map[string]string{"aws": "eks.amazonaws.com/role-arn", "gcp": "iam.gke.io/gcp-service-account"}[cloud]
			for k := range sa.Annotations {
				if k != wantAnnotation {
					t.Errorf("ServiceAccount annotation %s on %s", k, cloud)
				}
			}
			if wantAnnotation != "" && sa.Annotations[wantAnnotation] == "" {
				t.Errorf("ServiceAccount annotations %v lack %s", sa.Annotations, wantAnnotation)
			}
			simRoles := 0
			for _, cr := range all[*rbacv1.ClusterRole](r.objs) {
				if cr.Name == Release+"-sim" {
					simRoles++
				}
			}
			if want := map[bool]int{true: 1}[cloud == "sim"]; simRoles != want {
				t.Errorf("%d ClusterRoles %s-sim, want %d", simRoles, Release, want)
			}
			switch cloud {
			case "gcp":
				for _, want := range []string{"--gcp-project=acme-ml", "--region=europe-west4", "--gcp-subnetwork=regions/europe-west4/subnetworks/default"} {
					if !slices.Contains(args, want) {
						t.Errorf("args %q lack %s", args, want)
					}
				}
			case "sim":
				if !slices.Contains(args, "--sim-state=/var/lib/tiler/sim-cloud.json") || len(dep.Spec.Template.Spec.Volumes) != 1 ||
					dep.Spec.Template.Spec.Volumes[0].EmptyDir == nil {
					t.Errorf("sim: args %q, volumes %+v: want the state file on an emptyDir", args, dep.Spec.Template.Spec.Volumes)
				}
			}
			for _, a := range args {
				if strings.HasPrefix(a, "--aws-") && cloud != "aws" || strings.HasPrefix(a, "--gcp-") && cloud != "gcp" {
					t.Errorf("%s: arg %s", cloud, a)
				}
			}
			if slices.Contains(r.kinds, "ServiceMonitor") {
				t.Error("a ServiceMonitor by default")
			}
		})
	}

	t.Run("values", func(t *testing.T) {
		policyYAML := `{apiVersion: tiler.dev/v1alpha1, kind: CostPolicy, pools: [{name: general, instanceFamilies: [m7i]}]}`
		vals, err := Values("cloud=sim", "replicas=3", "namespace.create=false", "serviceMonitor.enabled=true", "serviceMonitor.labels.release=prom")
		if err != nil {
			t.Fatal(err)
		}
		var pol map[string]any
		if err := yaml.Unmarshal([]byte(policyYAML), &pol); err != nil {
			t.Fatal(err)
		}
		vals["costPolicies"] = map[string]any{"general": pol}
		m, err := Render(Namespace, vals)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "r.yaml")
		var typed []string
		for _, doc := range strings.Split(m, "\n---\n") {
			if !strings.Contains(doc, "kind: ServiceMonitor") {
				typed = append(typed, doc)
			} else if !strings.Contains(doc, "release: prom") || !strings.Contains(doc, "port: metrics") {
				t.Errorf("ServiceMonitor without the label or the metrics port:\n%s", doc)
			}
		}
		if len(typed) == len(strings.Split(m, "\n---\n")) {
			t.Error("serviceMonitor.enabled=true rendered no ServiceMonitor")
		}
		_ = os.WriteFile(path, []byte(strings.Join(typed, "\n---\n")), 0o600)
		objs, err := manifest.Decode(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(all[*corev1.Namespace](objs)); n != 0 {
			t.Errorf("%d Namespaces with namespace.create=false", n)
		}
		if dep := only[*appsv1.Deployment](t, objs); *dep.Spec.Replicas != 3 {
			t.Errorf("replicas %d, want 3", *dep.Spec.Replicas)
		}
		cm := only[*corev1.ConfigMap](t, objs)
		if cm.Name != "general" || cm.Namespace != Namespace || cm.Labels["tiler.dev/cost-policy"] != "true" {
			t.Errorf("cost policy ConfigMap %s/%s labels %v", cm.Namespace, cm.Name, cm.Labels)
		}
		p, err := policy.Parse([]byte(cm.Data["policy.yaml"]))
		if err != nil {
			t.Fatalf("the rendered cost policy does not parse: %v\n%s", err, cm.Data["policy.yaml"])
		}
		if len(p.Pools) != 1 || p.Pools[0].Name != "general" {
			t.Errorf("rendered policy pools %+v", p.Pools)
		}
	})
}

// TestBadValues: a bad value fails the rendering with an error that names it.
func TestBadValues(t *testing.T) {
	for _, c := range []struct {
		set  []string
		want []string
	}{
		{[]string{"cloud=foo"}, []string{"cloud", "aws", "gcp", "sim"}},
		{[]string{"replicas=0"}, []string{"replicas", "minimum"}},
		{[]string{"replica=3"}, []string{"replica", "not allowed"}},
		{[]string{"logLevel=verbose"}, []string{"logLevel"}},
		{[]string{"metricsPort=70000"}, []string{"metricsPort"}},
		{[]string{"extraArgs={batch-idle=2s}"}, []string{"extraArgs"}},
		{[]string{"cloud=gcp"}, []string{"gcp.project is required with cloud gcp"}},
		{[]string{"sim.bootDelay=3 seconds"}, []string{"/sim/bootDelay"}},
		{[]string{"forecasts.prometheusURL=prometheus:9090"}, []string{"/forecasts/prometheusURL"}},
		{[]string{"costPolicies.p.kind=Policy", "costPolicies.p.apiVersion=tiler.dev/v1alpha1"}, []string{"/costPolicies/p/kind", "CostPolicy"}},
	} {
		vals, err := Values(c.set...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Render(Namespace, vals)
		if err == nil {
			t.Errorf("%q rendered", c.set)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q does not mention %q", c.set, err, w)
			}
		}
	}
}
