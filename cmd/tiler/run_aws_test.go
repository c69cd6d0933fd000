package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/deploy/crds"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zaptest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	awscloud "github.com/tiler-dev/tiler/cloudprovider/aws"
	"github.com/tiler-dev/tiler/cloudprovider/aws/awstest"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

// Subnets of the run test, one per zone of the recorded offerings.
var runSubnets = map[string]string{
	"us-east-1a": "subnet-0aaa1111bbb222333", "us-east-1b": "subnet-0abc1234def567890",
	"us-east-1c": "subnet-0def5678abc123456", "us-east-1d": "subnet-0ddd4444eee555666",
}

// TestRunAWSWire runs `tiler run --cloud aws --endpoint URL` as the binary wires it (runCmd's
// flags, then newRuntime) against a real control plane and the fake EC2/Pricing server: the live
// catalog comes from the recorded DescribeInstanceTypes, offerings and prices; a pending GPU pod
// makes the controller ensure a managed launch template (nodeadm user data with the pod's pool
// labels and GPU taint) and send one CreateFleet of type instant with the plan's offering and
// fallbacks as overrides, each in its zone's subnet, the launch's client token and tags, and the
// template. The launch record is written with the instance ID EC2 returned. The instance never
// becomes a Node; later batches plan the pod onto it in flight and send no second CreateFleet.
func TestRunAWSWire(t *testing.T) {
	setAWSTestEnv(t)
	cp := cptest.Start(t, controlplane.Options{})
	srv := awstest.NewServer(t)
	scriptRunCatalog(t, srv)
	// The price refresher reads prices again in the background.
	srv.Always("GetProducts", awstest.GetProducts("", awstest.PriceItem(awstest.Region, "g4dn.8xlarge", "2.176")))
	srv.Always("DescribeSpotPriceHistory", awstest.XMLFixture(t, "DescribeSpotPriceHistory.lastpage.xml"))
	srv.Always("DescribeAvailabilityZones", awstest.XMLFixture(t, "DescribeAvailabilityZones.xml"))
	templates := srv.ServeLaunchTemplates()
	srv.Always("DescribeInstances", awstest.DescribeInstances(""))
	srv.Handle("CreateFleet", launchFirstOverride("i-0run00000000000001"))

	var subnets []string
	for z, s := range runSubnets {
		subnets = append(subnets, z+"="+s)
	}
	sort.Strings(subnets)
	args := []string{"--cloud", "aws", "--region", awstest.Region, "--endpoint", srv.URL, "--kubeconfig", cp.Kubeconfig(),
		"--cluster-name", "run-aws", "--aws-subnets", strings.Join(subnets, ","),
		"--aws-eks-cluster", "eks-run", "--aws-cluster-endpoint", "https://ABCDEF0123456789.gr7.us-east-1.eks.amazonaws.com",
		"--aws-cluster-ca", "Y2VydGlmaWNhdGVBdXRob3JpdHk=", "--aws-service-cidr", "10.100.0.0/16",
		"--aws-image-id", "ami-0cpu000000000000a", "--aws-gpu-image-id", "ami-0gpu000000000000b",
		"--aws-instance-profile", "tiler-node", "--aws-security-groups", "sg-0cluster000000000",
		"--batch-idle", "100ms", "--batch-max", "500ms", "--resync-period", "200ms", "--nominate=false"}
	cfg, rf := runConfig(t, args...)

	kube := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	dyn := dynamic.NewForConfigOrDie(cp.RESTConfig())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cfg.Namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Without the launch records' CustomResourceDefinition the controller does not start, and
	// says which to install.
	bare, err := newRuntime(ctx, cfg, rf, zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("newRuntime: %v", err)
	}
	if err := bare.ctrl.Run(ctx); err == nil || !strings.Contains(err.Error(), provisioner.LaunchRecordsCRD+" is not installed") {
		t.Fatalf("run without the CRD: %v, want an error naming %s", err, provisioner.LaunchRecordsCRD)
	}
	if err := crds.Install(ctx, dyn, time.Minute); err != nil {
		t.Fatal(err)
	}
	rt, err := newRuntime(ctx, cfg, rf, zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("newRuntime: %v", err)
	}
	if rt.provider.Name() != "aws" || len(rt.catalog.Types) == 0 || rt.catalog.Types[0].Offerings[0].Zone == "" {
		t.Fatalf("provider %s, catalog %s with %d types", rt.provider.Name(), rt.catalog.Name, len(rt.catalog.Types))
	}
	go func() { _ = rt.ctrl.Run(ctx) }()

	pod := simtest.Pod("infer-0").Label("app", "infer").CPU("2").Mem("8Gi").GPU(1).Obj()
	pod.Spec.SchedulerName = corev1.DefaultSchedulerName
	if _, err := kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "a CreateFleet call", func() bool { return len(srv.Requests("CreateFleet")) > 0 })
	var rec provisioner.LaunchRecord
	waitFor(t, 10*time.Second, "the launch record with the instance ID", func() bool {
		recs := launchRecords(t, dyn, cfg.Namespace)
		if len(recs) == 1 && recs[0].InstanceID != "" {
			rec = recs[0]
			return true
		}
		return false
	})
	if rec.InstanceID != "i-0run00000000000001" || rec.Pool != "gpu" || !cmp.Equal(rec.Pods, []string{"default/infer-0"}) {
		t.Errorf("launch record %+v", rec)
	}

	// The managed launch template: one, of pool gpu, on the GPU AMI, booting a NodeConfig of the
	// EKS cluster with the node's pool label and GPU taint.
	if names := templates.Names(); len(names) != 1 || !regexp.MustCompile(`^tiler-gpu-[0-9a-f]{16}$`).MatchString(names[0]) {
		t.Fatalf("launch templates %v, want one tiler-gpu-<hash>", names)
	}
	create := srv.Requests("CreateLaunchTemplate")[0]
	if got := create.Form.Get("LaunchTemplateData.ImageId"); got != "ami-0gpu000000000000b" {
		t.Errorf("template AMI %s, want the GPU AMI", got)
	}
	ud, err := create.UserData()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Content-Type: application/node.eks.aws", "kind: NodeConfig", "name: eks-run",
		"apiServerEndpoint: https://ABCDEF0123456789.gr7.us-east-1.eks.amazonaws.com", "cidr: 10.100.0.0/16",
		"tiler.dev/pool=gpu", "--register-with-taints=nvidia.com/gpu=present:NoSchedule"} {
		if !strings.Contains(string(ud), want) {
			t.Errorf("user data lacks %q:\n%s", want, ud)
		}
	}

	// The fleet: instant, the launch's token, the template, the plan's offering then its
	// fallbacks (the record keeps them) as overrides in their zones' subnets, the launch's tags.
	form := srv.Requests("CreateFleet")[0].Form
	ct := rec.CapacityType
	strategy := map[api.CapacityType][2]string{
		api.Spot:     {"SpotOptions.AllocationStrategy", "price-capacity-optimized"},
		api.OnDemand: {"OnDemandOptions.AllocationStrategy", "lowest-price"}}[ct]
	for k, want := range map[string]string{
		"Type":        "instant",
		"ClientToken": awscloud.ClientToken(rec.LaunchID, ct),
		"LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName": templates.Names()[0],
		"TargetCapacitySpecification.TotalTargetCapacity":                        "1",
		"TargetCapacitySpecification.DefaultTargetCapacityType":                  string(ct),
		strategy[0]: strategy[1],
	} {
		if got := form.Get(k); got != want {
			t.Errorf("CreateFleet %s = %q, want %q", k, got, want)
		}
	}
	want := []string{fmt.Sprintf("%s/%s/%s", rec.InstanceType, rec.Zone, runSubnets[rec.Zone])}
	for _, f := range rec.Fallbacks {
		if f.CapacityType == ct {
			want = append(want, fmt.Sprintf("%s/%s/%s", f.InstanceType, f.Zone, runSubnets[f.Zone]))
		}
	}
	if len(want) < 2 {
		t.Errorf("the launch has no fallback of its capacity type: %+v", rec.Fallbacks)
	}
	if diff := cmp.Diff(want, fleetOverrides(form)); diff != "" {
		t.Errorf("CreateFleet overrides (-offering and fallbacks +sent):\n%s", diff)
	}
	tags := srv.Requests("CreateFleet")[0].TagSpecifications()["instance"]
	for k, v := range map[string]string{api.TagCluster: "run-aws", api.TagLaunchID: rec.LaunchID,
		api.TagNodeName: rec.NodeName, api.TagPool: "gpu", awscloud.TagName: rec.NodeName,
		api.TagGPUSharing: "exclusive"} {
		if tags[k] != v {
			t.Errorf("instance tag %s = %q, want %q (tags %v)", k, tags[k], v, tags)
		}
	}

	// Later batches see the pod still pending and plan it onto the instance in flight.
	batches := batchCount(t, rt)
	waitFor(t, 20*time.Second, "three more batches", func() bool { return batchCount(t, rt) >= batches+3 })
	if n := len(srv.Requests("CreateFleet")); n != 1 {
		t.Errorf("%d CreateFleet calls after more batches, want 1", n)
	}
	if recs := launchRecords(t, dyn, cfg.Namespace); len(recs) != 1 {
		t.Errorf("%d launch records, want 1", len(recs))
	}
}

// scriptRunCatalog scripts the live catalog of the recorded payloads (scriptAWSCatalog), with
// g4dn.8xlarge, the cheapest type for one GPU, offered in us-east-1b and us-east-1c too, so that
// a node planned as it has fallbacks in other zones.
func scriptRunCatalog(t *testing.T, srv *awstest.Server) {
	srv.Enqueue("DescribeInstanceTypes",
		awstest.XMLFixture(t, "DescribeInstanceTypes.page1.xml"), awstest.XMLFixture(t, "DescribeInstanceTypes.page2.xml"))
	first := bytes.Replace(awstest.Fixture(t, "DescribeInstanceTypeOfferings.xml"),
		[]byte("</instanceTypeOfferingSet>"), []byte("</instanceTypeOfferingSet><nextToken>offerings-2</nextToken>"), 1)
	var more strings.Builder
	for _, z := range []string{"us-east-1b", "us-east-1c"} {
		fmt.Fprintf(&more, "<item><instanceType>g4dn.8xlarge</instanceType><locationType>availability-zone</locationType><location>%s</location></item>", z)
	}
	second := bytes.Replace(awstest.Fixture(t, "DescribeInstanceTypeOfferings.page2.xml"),
		[]byte("</instanceTypeOfferingSet>"), []byte(more.String()+"</instanceTypeOfferingSet>"), 1)
	srv.Enqueue("DescribeInstanceTypeOfferings", awstest.XML(first), awstest.XML(second))
	srv.Enqueue("GetProducts", awstest.PricingJSON(awstest.Fixture(t, "GetProducts.page1.json")),
		awstest.GetProducts("",
			awstest.PriceItem(awstest.Region, "g4dn.8xlarge", "2.176"), awstest.PriceItem(awstest.Region, "g5.12xlarge", "5.672"),
			awstest.PriceItem(awstest.Region, "g4ad.16xlarge", "3.468"), awstest.PriceItem(awstest.Region, "trn1.2xlarge", "1.34375")))
	srv.Enqueue("DescribeSpotPriceHistory", awstest.XMLFixture(t, "DescribeSpotPriceHistory.xml"),
		awstest.XMLFixture(t, "DescribeSpotPriceHistory.lastpage.xml"))
}

// runConfig parses `tiler run` arguments as the binary does and returns the configuration.
func runConfig(t *testing.T, args ...string) (provisioner.Config, runFlags) {
	t.Helper()
	var cfg provisioner.Config
	var rf runFlags
	cmd := runCmd(func(_ context.Context, c provisioner.Config, f runFlags) error {
		cfg, rf = c, f
		return nil
	})
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("tiler run %v: %v", args, err)
	}
	return cfg, rf
}

// launchFirstOverride answers CreateFleet by launching the request's first override.
func launchFirstOverride(id string) awstest.Handler {
	return func(r awstest.Request) awstest.Response {
		prefix := "LaunchTemplateConfigs.1.Overrides.1."
		pool := awstest.FleetPool{Type: r.Form.Get(prefix + "InstanceType"), SubnetID: r.Form.Get(prefix + "SubnetId"),
			Zone: r.Form.Get(prefix + "AvailabilityZone"), Lifecycle: r.Form.Get("TargetCapacitySpecification.DefaultTargetCapacityType")}
		return awstest.CreateFleet([]awstest.FleetLaunch{{Pool: pool, InstanceIDs: []string{id}}}, nil)
	}
}

// fleetOverrides lists a CreateFleet's overrides as type/zone/subnet, in request order.
func fleetOverrides(form map[string][]string) []string {
	get := func(k string) string {
		if v := form[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	var out []string
	for c := 1; get(fmt.Sprintf("LaunchTemplateConfigs.%d.LaunchTemplateSpecification.LaunchTemplateName", c)) != ""; c++ {
		for o := 1; ; o++ {
			p := fmt.Sprintf("LaunchTemplateConfigs.%d.Overrides.%d.", c, o)
			if get(p+"InstanceType") == "" {
				break
			}
			out = append(out, get(p+"InstanceType")+"/"+get(p+"AvailabilityZone")+"/"+get(p+"SubnetId"))
		}
	}
	return out
}

// launchRecords reads the controller's launch records.
func launchRecords(t *testing.T, dyn dynamic.Interface, namespace string) []provisioner.LaunchRecord {
	t.Helper()
	recs, err := provisioner.ListRecords(context.Background(), dyn, namespace)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// batchCount is how many batches the controller has run (its batch duration histogram's count).
func batchCount(t *testing.T, rt *runtime) uint64 {
	t.Helper()
	mfs, err := rt.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "tiler_provisioner_batch_duration_seconds" && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return 0
}

func waitFor(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	testwait.Until(t, testwait.Slow, what, timeout, ok)
}

// setAWSTestEnv gives the SDK's default chain static credentials and no shared files or IMDS.
func setAWSTestEnv(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "SECRETTEST")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// TestRunAWSBootstrapFlags: --cloud aws takes either the node bootstrap flags (managed launch
// templates) or a launch template of your own, never both and not neither; the provider's own
// validation names a missing bootstrap field.
func TestRunAWSBootstrapFlags(t *testing.T) {
	base := []string{"--cloud", "aws", "--aws-subnets", "us-east-1a=subnet-0aaa1111bbb222333"}
	bootstrap := []string{"--aws-cluster-endpoint", "https://x.eks.amazonaws.com", "--aws-cluster-ca", "Y2E=",
		"--aws-service-cidr", "10.100.0.0/16", "--aws-image-id", "ami-0123456789abcdef0", "--aws-instance-profile", "nodes",
		"--aws-security-groups", "sg-01,sg-02"}
	cfg, rf := runConfig(t, append(base, bootstrap...)...)
	c, err := awsConfig(rf, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := awscloud.NodeBootstrap{APIServerEndpoint: "https://x.eks.amazonaws.com", CertificateAuthority: "Y2E=",
		ServiceCIDR: "10.100.0.0/16", ImageID: "ami-0123456789abcdef0", InstanceProfile: "nodes", SecurityGroupIDs: []string{"sg-01", "sg-02"}}
	if c.Bootstrap == nil || c.LaunchTemplateName != "" {
		t.Fatalf("bootstrap flags: config %+v", c)
	}
	if diff := cmp.Diff(want, *c.Bootstrap); diff != "" {
		t.Errorf("bootstrap (-want +got):\n%s", diff)
	}
	if err := c.ValidateProvider(); err != nil {
		t.Errorf("valid bootstrap flags: %v", err)
	}
	if c.TemplateRetention != awscloud.DefaultTemplateRetention || cfg.GarbageCollectPeriod != time.Hour {
		t.Errorf("template retention %s, garbage-collect period %s; want the defaults", c.TemplateRetention, cfg.GarbageCollectPeriod)
	}
	cfg, rf = runConfig(t, append(append(base, bootstrap...), "--aws-template-retention", "72h", "--garbage-collect-period", "30m")...)
	if c, _ := awsConfig(rf, cfg); c.TemplateRetention != 72*time.Hour || cfg.GarbageCollectPeriod != 30*time.Minute {
		t.Errorf("--aws-template-retention 72h --garbage-collect-period 30m: %s, %s", c.TemplateRetention, cfg.GarbageCollectPeriod)
	}

	cfg, rf = runConfig(t, append(base, "--aws-launch-template", "my-nodes")...)
	if c, err := awsConfig(rf, cfg); err != nil || c.LaunchTemplateName != "my-nodes" || c.Bootstrap != nil {
		t.Errorf("--aws-launch-template: %+v, %v", c, err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{base, "--cloud aws needs the node bootstrap flags"},
		{append(append(base, bootstrap...), "--aws-launch-template", "my-nodes"), "exclude each other"},
	} {
		cfg, rf := runConfig(t, tt.args...)
		if _, err := awsConfig(rf, cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want %q", tt.args, err, tt.want)
		}
	}
	cfg, rf = runConfig(t, append(base, "--aws-image-id", "ami-0123456789abcdef0")...)
	c, _ = awsConfig(rf, cfg)
	if err := c.ValidateProvider(); err == nil || !strings.Contains(err.Error(), "bootstrap.apiServerEndpoint must be set") {
		t.Errorf("a partial bootstrap: %v", err)
	}
}
