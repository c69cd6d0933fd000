package aws

import (
	"context"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/aws/awstest"
)

// TestLaunchSettings: a launch tags its instance with the digest of its launch settings, and the
// instance answers it (with its subnet) both from the launch and from DescribeInstances, equal to
// what LaunchSettings says for its zone. The digest moves with the security groups (not their
// order), the instance profile, the cluster coordinates and the zone's subnet, not with the AMI; a
// zone Subnets does not map has no subnet part; an instance without the tag says nothing.
func TestLaunchSettings(t *testing.T) {
	srv := awstest.NewServer(t)
	srv.ServeLaunchTemplates()
	fleets := srv.ServeFleets()
	ctx := context.Background()
	provider := func(change func(*Config)) *Provider {
		t.Helper()
		cfg := bootstrapConfig(srv.URL)
		if change != nil {
			change(&cfg)
		}
		p, err := NewProvider(ctx, cfg, fakeClock(), srv.LoadOptions()...)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := provider(nil)
	inst, err := p.Create(ctx, webRequest("web-1"))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	now := settingsIn(t, p, inst.Offering.Zone)
	if now == "" || inst.Settings != now || inst.Tags["tiler.dev/launch-settings"] == "" {
		t.Fatalf("launched with settings %q (tag %q), LaunchSettings %q: want them equal and set", inst.Settings, inst.Tags["tiler.dev/launch-settings"], now)
	}
	if want := inst.Tags["tiler.dev/launch-settings"] + ":" + p.cfg.Subnets[inst.Offering.Zone]; inst.Settings != want {
		t.Errorf("settings %q, want the digest and the zone's subnet %q", inst.Settings, want)
	}
	got, err := p.Get(ctx, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Settings != inst.Settings {
		t.Errorf("described settings %q, want the launch's %q", got.Settings, inst.Settings)
	}
	if len(fleets.Instances()) != 1 {
		t.Fatalf("%d instances, want 1", len(fleets.Instances()))
	}
	zone := inst.Offering.Zone
	same := map[string]func(*Config){
		"security groups reordered": func(c *Config) {
			c.Bootstrap.SecurityGroupIDs = []string{c.Bootstrap.SecurityGroupIDs[1], c.Bootstrap.SecurityGroupIDs[0]}
		},
		"another AMI":           func(c *Config) { c.Bootstrap.ImageID = "ami-0cpu000000000000z" },
		"another zone's subnet": func(c *Config) { c.Subnets["us-east-1c"] = "subnet-0other000000000" },
	}
	for name, change := range same {
		if s := settingsIn(t, provider(change), zone); s != inst.Settings {
			t.Errorf("%s: settings %q, want unchanged %q", name, s, inst.Settings)
		}
	}
	differ := map[string]func(*Config){
		"a security group added": func(c *Config) {
			c.Bootstrap.SecurityGroupIDs = append(c.Bootstrap.SecurityGroupIDs, "sg-0new000000000000")
		},
		"another instance profile": func(c *Config) { c.Bootstrap.InstanceProfile = "tiler-node-v2" },
		"another API endpoint":     func(c *Config) { c.Bootstrap.APIServerEndpoint = "https://FEDCBA.gr7.us-east-1.eks.amazonaws.com" },
		"the zone's subnet":        func(c *Config) { c.Subnets[zone] = "subnet-0moved000000000" },
	}
	for name, change := range differ {
		if s := settingsIn(t, provider(change), zone); s == inst.Settings || s == "" {
			t.Errorf("%s: settings %q, want other than %q", name, s, inst.Settings)
		}
	}
	unmapped := provider(func(c *Config) { delete(c.Subnets, "us-east-1a") })
	if s := settingsIn(t, unmapped, "us-east-1a"); s != unmapped.settings {
		t.Errorf("a zone without a subnet: settings %q, want the digest alone", s)
	}
	if s := p.instanceSettings("", zone, "subnet-x"); s != "" {
		t.Errorf("an instance without the tag: settings %q, want none", s)
	}
}

// settingsIn is p.LaunchSettings in zone, failing the test on an error.
func settingsIn(t *testing.T, p *Provider, zone string) string {
	t.Helper()
	s, err := p.LaunchSettings(context.Background(), zone)
	if err != nil {
		t.Fatalf("LaunchSettings(%s): %v", zone, err)
	}
	return s
}

// TestLaunchTemplateVersionDrift: with a launch template of your own at $Default, a launch names
// the version number $Default names then (DescribeLaunchTemplates), and its settings carry that
// number: when the template's default version moves, LaunchSettings moves with it once the image
// refresh has passed (so the nodes of the old version drift), and the next launch names the new
// number and records the new settings. $Latest follows the latest version; the version named by
// its number has the digest $Default had when it named that number; an instance launched from
// $Default before versions were resolved (tagged with the digest of the symbolic version) says
// nothing; a template EC2 does not list is an error naming it, for LaunchSettings and Create.
func TestLaunchTemplateVersionDrift(t *testing.T) {
	srv := awstest.NewServer(t)
	lts := srv.ServeLaunchTemplates(awstest.LaunchTemplate{ID: testTemplate, Name: "gpu-nodes", DefaultVersion: 3, LatestVersion: 5})
	srv.ServeFleets()
	ctx := context.Background()
	clk := fakeClock()
	provider := func(version string, change func(*Config)) *Provider {
		t.Helper()
		cfg := testConfig(srv.URL)
		cfg.LaunchTemplateVersion = version
		if change != nil {
			change(&cfg)
		}
		p, err := NewProvider(ctx, cfg, clk, srv.LoadOptions()...)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	launch := func(p *Provider, id string) (*cloudprovider.Instance, string) {
		t.Helper()
		inst, err := p.Create(ctx, webRequest(id))
		if err != nil {
			t.Fatalf("Create %s: %v", id, err)
		}
		reqs := srv.Requests("CreateFleet")
		return inst, reqs[len(reqs)-1].Form.Get("LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version")
	}
	p := provider("", nil)
	first, v := launch(p, "web-1")
	zone := first.Offering.Zone
	s3 := settingsIn(t, p, zone)
	if v != "3" || first.Settings != s3 || first.Tags[api.TagLaunchSettings] == p.settings {
		t.Fatalf("$Default: launched version %q with settings %q (LaunchSettings %q): want version 3, the same settings, not the symbolic digest", v, first.Settings, s3)
	}
	if got, err := p.Get(ctx, first.ID); err != nil || got.Settings != first.Settings {
		t.Errorf("described settings %v %v, want the launch's %q", got, err, first.Settings)
	}
	lts.SetVersions("gpu-nodes", 4, 5)
	if s := settingsIn(t, p, zone); s != s3 {
		t.Errorf("within the refresh: settings %q, want version 3's %q", s, s3)
	}
	clk.Step(p.cfg.imageRefresh())
	s4 := settingsIn(t, p, zone)
	if s4 == s3 {
		t.Fatalf("the default version moved to 4: settings %q unchanged", s4)
	}
	second, v := launch(p, "web-2")
	if v != "4" || second.Settings != s4 {
		t.Errorf("after the move: launched version %q with settings %q, want 4 and %q", v, second.Settings, s4)
	}
	if latest, v := launch(provider(LatestLaunchTemplateVersion, nil), "web-3"); v != "5" || latest.Settings == s4 {
		t.Errorf("$Latest: launched version %q with settings %q, want 5 and other than version 4's", v, latest.Settings)
	}
	if s := settingsIn(t, provider("4", nil), zone); s != s4 {
		t.Errorf("version 4 by number: settings %q, want $Default's when it named 4: %q", s, s4)
	}
	if s := p.instanceSettings(p.settings, zone, p.cfg.Subnets[zone]); s != "" {
		t.Errorf("an instance tagged with $Default's digest before versions were resolved: settings %q, want none", s)
	}
	missing := provider("", func(c *Config) { c.LaunchTemplateID, c.LaunchTemplateName = "", "no-such-template" })
	if _, err := missing.LaunchSettings(ctx, zone); err == nil || !strings.Contains(err.Error(), "no-such-template") {
		t.Errorf("a template EC2 does not list: LaunchSettings error %v, want one naming it", err)
	}
	if _, err := missing.Create(ctx, webRequest("web-4")); err == nil || !strings.Contains(err.Error(), "no-such-template") {
		t.Errorf("a template EC2 does not list: Create error %v, want one naming it", err)
	}
}
