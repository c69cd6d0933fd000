package aws

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/api"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/cloudprovider/aws/awstest"
)

// TestCollectGarbageTemplates: with a week's retention, CollectGarbage deletes the managed
// templates of this cluster that are older than a week and that no launch needed within it —
// and only once it has been collecting for a week. It keeps templates a launch used recently,
// templates of another cluster, and templates without the bootstrap-hash tag (your own); a
// launch that needs a deleted template creates it again.
func TestCollectGarbageTemplates(t *testing.T) {
	ctx := context.Background()
	week := 7 * 24 * time.Hour
	hash := func(cluster string) map[string]string {
		return map[string]string{api.TagCluster: cluster, api.TagBootstrapHash: "0123456789abcdef", api.TagPool: "web"}
	}
	srv := awstest.NewServer(t)
	store := srv.ServeLaunchTemplates(
		awstest.LaunchTemplate{ID: "lt-000000000000000a1", Name: "tiler-web-0123456789abcdef", CreateTime: testNow.Add(-30 * 24 * time.Hour), Tags: hash(testCluster)},
		awstest.LaunchTemplate{ID: "lt-000000000000000a2", Name: "tiler-web-other-cluster", CreateTime: testNow.Add(-30 * 24 * time.Hour), Tags: hash("other")},
		awstest.LaunchTemplate{ID: "lt-000000000000000a3", Name: "my-own-template", CreateTime: testNow.Add(-30 * 24 * time.Hour), Tags: map[string]string{api.TagCluster: testCluster}},
	)
	srv.Always("DescribeInstances", noInstances())
	pool := awstest.FleetPool{Type: "m7i.xlarge", SubnetID: subnetB, Zone: "us-east-1b", Lifecycle: "spot"}
	srv.Always("CreateFleet", awstest.CreateFleet([]awstest.FleetLaunch{{Pool: pool, InstanceIDs: []string{"i-0web"}}}, nil))
	clk := clocktesting.NewFakeClock(testNow)
	cfg := bootstrapConfig(srv.URL)
	cfg.TemplateRetention = week
	p, err := NewProvider(ctx, cfg, clk, srv.LoadOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	// A launch at day 0 creates the two templates of webRequest (c7i's labels, m7i's).
	if _, err := p.Create(ctx, webRequest("web-1")); err != nil {
		t.Fatal(err)
	}
	launched := slices.DeleteFunc(store.Names(), func(n string) bool {
		return n == "tiler-web-0123456789abcdef" || n == "tiler-web-other-cluster" || n == "my-own-template"
	})
	if len(launched) != 2 {
		t.Fatalf("templates after the launch: %v", store.Names())
	}
	collect := func() []string {
		t.Helper()
		deleted, err := p.CollectGarbage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return deleted
	}
	if d := collect(); len(d) != 0 { // the first call starts the week of watching
		t.Fatalf("deleted %v on the first call", d)
	}
	clk.Step(3 * 24 * time.Hour)
	if d := collect(); len(d) != 0 {
		t.Fatalf("deleted %v after three days of watching, want nothing before a week", d)
	}
	// Day 6: the same launch configuration is needed again (a relaunch of web-2).
	clk.Step(3 * 24 * time.Hour)
	store.SetNow(clk.Now())
	if _, err := p.Create(ctx, webRequest("web-2")); err != nil {
		t.Fatal(err)
	}
	clk.Step(2 * 24 * time.Hour) // day 8: a week of watching has passed
	if d := collect(); !slices.Equal(d, []string{"tiler-web-0123456789abcdef"}) {
		t.Fatalf("day 8: deleted %v, want only the month-old template no launch used", d)
	}
	if got := store.Names(); !slices.Contains(got, launched[0]) || !slices.Contains(got, launched[1]) ||
		!slices.Contains(got, "tiler-web-other-cluster") || !slices.Contains(got, "my-own-template") {
		t.Fatalf("day 8: templates left %v, want the two used on day 6, the other cluster's and your own", got)
	}
	clk.Step(6 * 24 * time.Hour) // day 14: eight days since the last use
	d := collect()
	if !slices.Equal(d, launched) {
		t.Fatalf("day 14: deleted %v, want the two templates last used on day 6 %v", d, launched)
	}
	// A later launch of that configuration creates its templates again.
	before := len(srv.Requests("CreateLaunchTemplate"))
	if _, err := p.Create(ctx, webRequest("web-3")); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Requests("CreateLaunchTemplate")) - before; n != 2 {
		t.Errorf("%d templates created again for the next launch, want 2", n)
	}
	for _, r := range srv.Requests("DeleteLaunchTemplate") {
		if id := r.Form.Get("LaunchTemplateId"); id == "" {
			t.Errorf("DeleteLaunchTemplate without LaunchTemplateId: %v", r.Form)
		}
	}
}

// TestManagedTemplatesFollowsPages: the listing CollectGarbage works from follows nextToken to
// the last page, sending the token back, so that templates on later pages are collected too.
func TestManagedTemplatesFollowsPages(t *testing.T) {
	tags := map[string]string{api.TagCluster: testCluster, api.TagBootstrapHash: "0123456789abcdef", api.TagPool: "web"}
	first := awstest.LaunchTemplate{ID: "lt-000000000000000b1", Name: "tiler-web-page-1", CreateTime: testNow, Tags: tags}
	second := awstest.LaunchTemplate{ID: "lt-000000000000000b2", Name: "tiler-web-page-2", CreateTime: testNow, Tags: tags}
	page1 := awstest.DescribeLaunchTemplates(first)
	page1.Body = bytes.Replace(page1.Body, []byte("</launchTemplates>"), []byte("</launchTemplates><nextToken>lt-page-2</nextToken>"), 1)
	srv := awstest.NewServer(t)
	srv.Enqueue("DescribeLaunchTemplates", page1, awstest.DescribeLaunchTemplates(second))
	cfg := bootstrapConfig(srv.URL)
	p, err := NewProvider(context.Background(), cfg, clocktesting.NewFakeClock(testNow), srv.LoadOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.managedTemplates(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, lt := range got {
		names = append(names, awssdk.ToString(lt.LaunchTemplateName))
	}
	if !slices.Equal(names, []string{first.Name, second.Name}) {
		t.Errorf("templates = %v, want both pages' %s and %s", names, first.Name, second.Name)
	}
	reqs := srv.Requests("DescribeLaunchTemplates")
	if len(reqs) != 2 || reqs[0].Form.Get("NextToken") != "" || reqs[1].Form.Get("NextToken") != "lt-page-2" {
		t.Errorf("requests = %d; want 2, the second with NextToken lt-page-2", len(reqs))
	}
}
