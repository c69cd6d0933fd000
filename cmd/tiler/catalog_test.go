package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/cloudprovider/gcp/gcptest"
)

// TestCatalogGCPWire runs `tiler catalog --cloud gcp` against a local server speaking the GCE and
// Cloud Billing REST wire formats, built on the recorded payloads.
func TestCatalogGCPWire(t *testing.T) {
	srv := gcptest.NewServer(t, "demo-project")
	srv.SetSKUPages(gcptest.Fixture(t, "cloudbilling.skus.list.page1.json"),
		gcptest.Fixture(t, "cloudbilling.skus.list.extra.json"), gcptest.Fixture(t, "cloudbilling.skus.list.page2.json"))
	srv.SetMachineTypePages("us-central1-c", gcptest.Fixture(t, "machineTypes.list.page2.json"))
	var out bytes.Buffer
	f := catalogFlags{cloud: "gcp", project: "demo-project", region: "us-central1", endpoint: srv.URL, noAuth: true, output: "table"}
	cat, err := loadCloudCatalog(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeCatalog(&out, cat, "table"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "g2-standard") && !strings.Contains(out.String(), "n1-standard") {
		t.Errorf("no G2 or N1 types listed:\n%s", out.String())
	}
	t.Log("\n" + out.String())
}

func TestCatalogEmbeddedJSON(t *testing.T) {
	cat, err := loadCloudCatalog(context.Background(), catalogFlags{cloud: "embedded", name: "aws-us-west-2"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := writeCatalog(&out, cat, "json"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"name": "aws-us-west-2"`) {
		t.Errorf("json output lacks the catalog name")
	}
	if _, err := loadCloudCatalog(context.Background(), catalogFlags{cloud: "azure"}); err == nil {
		t.Error("--cloud azure accepted")
	}
}
