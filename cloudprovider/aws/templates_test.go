package aws

import (
	"bytes"
	"context"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/mail"
	"regexp"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/aws/awstest"
)

const testCA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMvakNDQWVhZ0F3SUJBZ0lCQURBTkJna3Foa2lHOXcwQkFRc0ZBREFWCg=="

func bootstrapConfig(endpoint string) Config {
	c := testConfig(endpoint)
	c.LaunchTemplateID, c.LaunchTemplateVersion = "", ""
	c.Bootstrap = &NodeBootstrap{
		ClusterName:          "eks-prod",
		APIServerEndpoint:    "https://0123456789ABCDEF.gr7.us-east-1.eks.amazonaws.com",
		CertificateAuthority: testCA, ServiceCIDR: "10.100.0.0/16",
		ImageID: "ami-0cpu000000000000a", GPUImageID: "ami-0gpu000000000000b",
		InstanceProfile: "tiler-node", SecurityGroupIDs: []string{"sg-0cluster000000000", "sg-0nodes0000000000"},
	}
	return c
}

// webRequest is a spot node of pool web planned as c7i.xlarge in us-east-1a with two fallbacks:
// the same type in us-east-1b (same labels, so the same template) and m7i.xlarge in us-east-1b
// (its own instance-type labels, so a template of its own).
func webRequest(launchID string) cloudprovider.LaunchRequest {
	labels := func(typ, zone, family string) map[string]string {
		return map[string]string{
			corev1.LabelHostname: "web-abcde", corev1.LabelTopologyZone: zone, corev1.LabelTopologyRegion: "us-east-1",
			corev1.LabelInstanceTypeStable: typ, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux",
			"tiler.dev/pool": "web", "tiler.dev/capacity-type": "spot", "tiler.dev/instance-family": family,
			"team": "web", "node.kubernetes.io/lifecycle": "spot", "node-role.kubernetes.io/web": "",
		}
	}
	same := ref("c7i.xlarge", "us-east-1b", api.Spot)
	other := ref("m7i.xlarge", "us-east-1b", api.Spot)
	return cloudprovider.LaunchRequest{
		LaunchID: launchID, NodeName: "web-abcde", Cluster: testCluster, Pool: "web",
		Offering:  ref("c7i.xlarge", "us-east-1a", api.Spot),
		Fallbacks: []api.Offering{same, other},
		Labels:    labels("c7i.xlarge", "us-east-1a", "c7i"),
		FallbackLabels: map[api.Offering]map[string]string{
			same: labels("c7i.xlarge", "us-east-1b", "c7i"), other: labels("m7i.xlarge", "us-east-1b", "m7i")},
		// The controller's reservation taint carries the launch ID; the shared template the
		// value api.ReservationPending.
		Taints: []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule},
			{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule},
			{Key: api.TaintReserved, Value: launchID, Effect: corev1.TaintEffectNoSchedule}},
	}
}

// TestManagedLaunchTemplates: with Config.Bootstrap, a launch ensures one launch template per
// bootstrap configuration among its offerings (DescribeLaunchTemplates by name, then
// CreateLaunchTemplate), whose user data is a MIME multi-part document holding a nodeadm
// NodeConfig with the cluster's coordinates and the kubelet flags of the node's labels (less
// those the kubelet and the cloud set) and taints; CreateFleet references each template with its
// overrides. A second launch of the same configuration calls neither template API again.
func TestManagedLaunchTemplates(t *testing.T) {
	srv := awstest.NewServer(t)
	store := srv.ServeLaunchTemplates()
	srv.Always("DescribeInstances", noInstances())
	pool := awstest.FleetPool{Type: "m7i.xlarge", SubnetID: subnetB, Zone: "us-east-1b", Lifecycle: "spot"}
	srv.Always("CreateFleet", awstest.CreateFleet([]awstest.FleetLaunch{{Pool: pool, InstanceIDs: []string{"i-0web"}}}, nil))
	p, err := NewProvider(context.Background(), bootstrapConfig(srv.URL), fakeClock(), srv.LoadOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := p.Create(context.Background(), webRequest("web-1"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if inst.Offering != ref("m7i.xlarge", "us-east-1b", api.Spot) {
		t.Errorf("launched %+v", inst.Offering)
	}
	// The instance boots the template's AMI, the one ImageFor names for drift.
	if img, err := p.ImageFor(context.Background(), api.GPUConfig{}); err != nil || inst.Image != "ami-0cpu000000000000a" || img != inst.Image {
		t.Errorf("launched image %q, ImageFor %q, %v; want ami-0cpu000000000000a", inst.Image, img, err)
	}
	if got, err := p.ImageFor(context.Background(), api.GPUConfig{Sharing: api.Exclusive}); err != nil || got != "ami-0gpu000000000000b" {
		t.Errorf("ImageFor a GPU node = %q, %v; want the GPU AMI", got, err)
	}

	creates := srv.Requests("CreateLaunchTemplate")
	if len(creates) != 2 {
		t.Fatalf("%d CreateLaunchTemplate calls, want 2 (c7i.xlarge's labels, m7i.xlarge's)", len(creates))
	}
	nameRE := regexp.MustCompile(`^tiler-web-[0-9a-f]{16}$`)
	var names []string
	for i, c := range creates {
		name := c.Form.Get("LaunchTemplateName")
		names = append(names, name)
		if !nameRE.MatchString(name) || c.Form.Get("ClientToken") != name {
			t.Errorf("template %d: name %q, client token %q", i, name, c.Form.Get("ClientToken"))
		}
		for k, want := range map[string]string{
			"LaunchTemplateData.ImageId":                              "ami-0cpu000000000000a",
			"LaunchTemplateData.IamInstanceProfile.Name":              "tiler-node",
			"LaunchTemplateData.SecurityGroupId.1":                    "sg-0cluster000000000",
			"LaunchTemplateData.SecurityGroupId.2":                    "sg-0nodes0000000000",
			"LaunchTemplateData.MetadataOptions.HttpTokens":           "required",
			"LaunchTemplateData.MetadataOptions.InstanceMetadataTags": "enabled",
			"TagSpecification.1.ResourceType":                         "launch-template",
		} {
			if got := c.Form.Get(k); got != want {
				t.Errorf("template %d: %s = %q, want %q", i, k, got, want)
			}
		}
		tags := c.TagSpecifications()["launch-template"]
		if tags[api.TagCluster] != testCluster || tags[api.TagPool] != "web" || !strings.HasSuffix(name, tags[api.TagBootstrapHash]) {
			t.Errorf("template %d tags %v", i, tags)
		}
	}
	if names[0] == names[1] {
		t.Fatalf("both configurations got template %s", names[0])
	}
	for i, family := range []string{"c7i", "m7i"} {
		ud, err := creates[i].UserData()
		if err != nil {
			t.Fatal(err)
		}
		nc := decodeNodeConfig(t, ud)
		want := map[string]any{
			"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig",
			"spec": map[string]any{
				"cluster": map[string]any{"name": "eks-prod", "apiServerEndpoint": "https://0123456789ABCDEF.gr7.us-east-1.eks.amazonaws.com",
					"certificateAuthority": testCA, "cidr": "10.100.0.0/16"},
				"kubelet": map[string]any{"flags": []any{
					// No hostname, zone, region, instance type, arch or OS (the kubelet and the
					// cloud set them), no node-role.kubernetes.io (the kubelet refuses it).
					"--node-labels=node.kubernetes.io/lifecycle=spot,team=web,tiler.dev/capacity-type=spot,tiler.dev/instance-family=" + family + ",tiler.dev/pool=web",
					"--register-with-taints=dedicated=web:NoSchedule,spot:PreferNoSchedule,tiler.dev/reserved=pending:NoSchedule",
				}},
			},
		}
		if diff := cmp.Diff(want, nc); diff != "" {
			t.Errorf("NodeConfig of template %d (-want +got):\n%s", i, diff)
		}
	}
	if diff := cmp.Diff(names, store.Names(), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("templates in EC2 (-created +stored):\n%s", diff)
	}

	form := srv.Requests("CreateFleet")[0].Form
	for k, want := range map[string]string{
		"LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName": names[0],
		"LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version":            "$Default",
		"LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateId":   "",
		"LaunchTemplateConfigs.1.Overrides.1.InstanceType":                       "c7i.xlarge",
		"LaunchTemplateConfigs.1.Overrides.1.AvailabilityZone":                   "us-east-1a",
		"LaunchTemplateConfigs.1.Overrides.2.InstanceType":                       "c7i.xlarge",
		"LaunchTemplateConfigs.1.Overrides.2.AvailabilityZone":                   "us-east-1b",
		"LaunchTemplateConfigs.1.Overrides.3.InstanceType":                       "",
		"LaunchTemplateConfigs.2.LaunchTemplateSpecification.LaunchTemplateName": names[1],
		"LaunchTemplateConfigs.2.Overrides.1.InstanceType":                       "m7i.xlarge",
		"LaunchTemplateConfigs.2.Overrides.1.SubnetId":                           subnetB,
		"LaunchTemplateConfigs.3.LaunchTemplateSpecification.LaunchTemplateName": "",
		"SpotOptions.AllocationStrategy":                                         "price-capacity-optimized",
	} {
		if got := form.Get(k); got != want {
			t.Errorf("CreateFleet %s = %q, want %q", k, got, want)
		}
	}

	// The same configuration again (another launch, so another reservation value): the
	// templates are known, no template call.
	if _, err := p.Create(context.Background(), webRequest("web-2")); err != nil {
		t.Fatal(err)
	}
	if n, m := len(srv.Requests("DescribeLaunchTemplates")), len(srv.Requests("CreateLaunchTemplate")); n != 2 || m != 2 {
		t.Errorf("after a second launch: %d DescribeLaunchTemplates and %d CreateLaunchTemplate calls, want 2 and 2", n, m)
	}

	// A new process finds the templates by name and creates none.
	p2, err := NewProvider(context.Background(), bootstrapConfig(srv.URL), fakeClock(), srv.LoadOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p2.Create(context.Background(), webRequest("web-3")); err != nil {
		t.Fatal(err)
	}
	if n, m := len(srv.Requests("DescribeLaunchTemplates")), len(srv.Requests("CreateLaunchTemplate")); n != 4 || m != 2 {
		t.Errorf("after a restart: %d DescribeLaunchTemplates and %d CreateLaunchTemplate calls, want 4 and 2", n, m)
	}
}

// TestManagedLaunchTemplateGPU: a GPU node boots the GPU AMI, and its kubelet labels carry the
// GPU configuration: the device plugin's time-slicing config, or the MIG manager's config.
func TestManagedLaunchTemplateGPU(t *testing.T) {
	for _, tt := range []struct {
		name string
		gpu  api.GPUConfig
		want string
	}{
		{"time-slicing", api.GPUConfig{Sharing: "time-slicing", Replicas: 4, RenameShared: true},
			"nvidia.com/device-plugin.config=tiler-time-slicing-4-renamed"},
		{"mig", api.GPUConfig{Sharing: "mig", MIGStrategy: "single", MIGConfig: "all-1g.10gb", MIGLayout: [][]string{{"1g.10gb"}}},
			"nvidia.com/mig.config=all-1g.10gb"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := awstest.NewServer(t)
			srv.ServeLaunchTemplates()
			srv.Always("DescribeInstances", noInstances())
			srv.Always("CreateFleet", awstest.XMLFixture(t, "CreateFleet.instant.success.xml"))
			p, err := NewProvider(context.Background(), bootstrapConfig(srv.URL), fakeClock(), srv.LoadOptions()...)
			if err != nil {
				t.Fatal(err)
			}
			req := cloudprovider.LaunchRequest{LaunchID: "gpu-1", NodeName: "gpu-node", Pool: "gpu",
				Offering: ref("g5.xlarge", "us-east-1b", api.Spot), GPU: tt.gpu,
				Labels: map[string]string{"tiler.dev/pool": "gpu"},
				Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}}
			if _, err := p.Create(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			c := srv.Requests("CreateLaunchTemplate")[0]
			if got := c.Form.Get("LaunchTemplateData.ImageId"); got != "ami-0gpu000000000000b" {
				t.Errorf("AMI %s, want the GPU AMI", got)
			}
			ud, err := c.UserData()
			if err != nil {
				t.Fatal(err)
			}
			flags := decodeNodeConfig(t, ud)["spec"].(map[string]any)["kubelet"].(map[string]any)["flags"].([]any)
			if !strings.Contains(flags[0].(string), tt.want) || flags[1] != "--register-with-taints=nvidia.com/gpu=present:NoSchedule" {
				t.Errorf("kubelet flags %v, want labels with %s and the GPU taint", flags, tt.want)
			}
		})
	}
}

// TestManagedLaunchTemplateRace: another replica created the template between the lookup and the
// create (AlreadyExists): the launch goes on with it.
func TestManagedLaunchTemplateRace(t *testing.T) {
	srv := awstest.NewServer(t)
	srv.Always("DescribeInstances", noInstances())
	srv.Always("DescribeLaunchTemplates", awstest.DescribeLaunchTemplates())
	srv.Always("CreateLaunchTemplate", awstest.EC2Error(http.StatusBadRequest, awstest.CodeLaunchTemplateExists, "Launch template name already in use."))
	srv.Always("CreateFleet", awstest.XMLFixture(t, "CreateFleet.instant.success.xml"))
	p, err := NewProvider(context.Background(), bootstrapConfig(srv.URL), fakeClock(), srv.LoadOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	req := webRequest("web-1")
	req.Fallbacks, req.FallbackLabels = nil, nil
	if _, err := p.Create(context.Background(), req); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if len(srv.Requests("CreateFleet")) != 1 {
		t.Error("no CreateFleet after the template race")
	}

	// Any other template error stops the launch before CreateFleet.
	srv2 := awstest.NewServer(t)
	srv2.Always("DescribeInstances", noInstances())
	srv2.Always("DescribeLaunchTemplates", awstest.DescribeLaunchTemplates())
	srv2.Always("CreateLaunchTemplate", awstest.EC2Error(http.StatusBadRequest, "InvalidAMIID.Malformed", "Invalid id: ami-0cpu000000000000a"))
	p, err = NewProvider(context.Background(), bootstrapConfig(srv2.URL), fakeClock(), srv2.LoadOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Create(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "creating launch template tiler-web-") || !strings.Contains(err.Error(), "InvalidAMIID.Malformed") {
		t.Fatalf("error %v, want the template error", err)
	}
	if len(srv2.Requests("CreateFleet")) != 0 {
		t.Error("CreateFleet called after a template error")
	}
}

func TestBootstrapConfigValidation(t *testing.T) {
	c := bootstrapConfig("")
	if err := c.ValidateProvider(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, tt := range []struct {
		name  string
		tweak func(*Config)
		want  string
	}{
		{"template and bootstrap", func(c *Config) { c.LaunchTemplateName = "nodes" }, "exactly one of launchTemplateID, launchTemplateName and bootstrap"},
		{"no endpoint", func(c *Config) { c.Bootstrap.APIServerEndpoint = "" }, "bootstrap.apiServerEndpoint must be set to the EKS cluster's endpoint"},
		{"http endpoint", func(c *Config) { c.Bootstrap.APIServerEndpoint = "http://x" }, `bootstrap.apiServerEndpoint "http://x" must be an https URL`},
		{"no CA", func(c *Config) { c.Bootstrap.CertificateAuthority = "" }, "bootstrap.certificateAuthority must be set"},
		{"CA not base64", func(c *Config) { c.Bootstrap.CertificateAuthority = "-----BEGIN" }, "bootstrap.certificateAuthority is not base64"},
		{"no CIDR", func(c *Config) { c.Bootstrap.ServiceCIDR = "" }, "bootstrap.serviceCIDR must be set"},
		{"bad CIDR", func(c *Config) { c.Bootstrap.ServiceCIDR = "10.100.0.0" }, `bootstrap.serviceCIDR "10.100.0.0" is not a CIDR`},
		{"no AMI", func(c *Config) { c.Bootstrap.ImageID = "" }, "bootstrap.imageID must be set"},
		{"bad GPU AMI", func(c *Config) { c.Bootstrap.GPUImageID = "img-1" }, `bootstrap.gpuImageID "img-1" is not an AMI ID`},
		{"SSM parameter without a name", func(c *Config) { c.Bootstrap.ImageID = SSMImagePrefix }, `bootstrap.imageID "resolve:ssm:" names no SSM parameter`},
		{"no profile", func(c *Config) { c.Bootstrap.InstanceProfile = "" }, "bootstrap.instanceProfile must be set"},
		{"no security group", func(c *Config) { c.Bootstrap.SecurityGroupIDs = nil }, "bootstrap.securityGroupIDs must list at least one"},
		{"bad security group", func(c *Config) { c.Bootstrap.SecurityGroupIDs = []string{"default"} }, `bootstrap.securityGroupIDs: "default" is not a security group ID`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := bootstrapConfig("")
			tt.tweak(&c)
			err := c.ValidateProvider()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// decodeNodeConfig parses user data as nodeadm does: a MIME multi-part document whose
// application/node.eks.aws part is the NodeConfig. It fails the test unless there is exactly one.
func decodeNodeConfig(t *testing.T, userData []byte) map[string]any {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(userData))
	if err != nil {
		t.Fatalf("user data is not a MIME document: %v\n%s", err, userData)
	}
	if msg.Header.Get("MIME-Version") != "1.0" {
		t.Errorf("MIME-Version %q", msg.Header.Get("MIME-Version"))
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/mixed" {
		t.Fatalf("Content-Type %q: %v", msg.Header.Get("Content-Type"), err)
	}
	r := multipart.NewReader(msg.Body, params["boundary"])
	var docs []map[string]any
	for {
		part, err := r.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(part)
		if part.Header.Get("Content-Type") != "application/node.eks.aws" {
			continue
		}
		var doc map[string]any
		if err := yaml.Unmarshal(bytes.TrimPrefix(body, []byte("---\n")), &doc); err != nil {
			t.Fatalf("NodeConfig part is not YAML: %v\n%s", err, body)
		}
		docs = append(docs, doc)
	}
	if len(docs) != 1 {
		t.Fatalf("%d NodeConfig parts in the user data, want 1:\n%s", len(docs), userData)
	}
	return docs[0]
}

func fakeClock() *clocktesting.FakeClock { return clocktesting.NewFakeClock(testNow) }
