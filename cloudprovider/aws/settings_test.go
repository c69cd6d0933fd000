package aws

import (
	"context"
	"testing"

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
	now := p.LaunchSettings(inst.Offering.Zone)
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
		if s := provider(change).LaunchSettings(zone); s != inst.Settings {
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
		if s := provider(change).LaunchSettings(zone); s == inst.Settings || s == "" {
			t.Errorf("%s: settings %q, want other than %q", name, s, inst.Settings)
		}
	}
	unmapped := provider(func(c *Config) { delete(c.Subnets, "us-east-1a") })
	if s := unmapped.LaunchSettings("us-east-1a"); s != unmapped.settings {
		t.Errorf("a zone without a subnet: settings %q, want the digest alone", s)
	}
	if s := p.instanceSettings("", zone, "subnet-x"); s != "" {
		t.Errorf("an instance without the tag: settings %q, want none", s)
	}
}
