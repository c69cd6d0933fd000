package gcp_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/cloudprovider/gcp/gcptest"
	"github.com/tiler-dev/tiler/internal/gcpapi"
	"github.com/tiler-dev/tiler/pricing/gcp"
)

func TestThrottlingIsRetried(t *testing.T) {
	tests := []struct {
		name     string
		fixture  string
		status   int
		failures int // consecutive failures of the first page request
		wantErr  string
		wantReqs int
	}{
		// fastRetry allows 3 attempts: two failures, then the page, then page 2.
		{"429 twice", "error.rateLimitExceeded.json", http.StatusTooManyRequests, 2, "", 4},
		{"503 twice", "error.backendError.json", http.StatusServiceUnavailable, 2, "", 4},
		{"403 rateLimitExceeded once", "error.rateLimitExceeded.json", http.StatusForbidden, 1, "", 3},
		{"429 three times: attempts exhausted", "error.rateLimitExceeded.json", http.StatusTooManyRequests, 3, "Rate Limit Exceeded", 3},
		{"quota is not retried", "error.quotaExceeded.json", http.StatusForbidden, 1, "NVIDIA_T4_GPUS", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := gcptest.NewServer(t, "my-project")
			srv.Fail(gcptest.Failure{Method: http.MethodGet, PathContains: "/skus", Status: tc.status, Body: gcptest.Fixture(t, tc.fixture), Times: tc.failures})
			prices, err := newSource(t, srv, a2HighGPU1G).Prices(context.Background())
			if tc.wantErr == "" && (err != nil || len(prices) != 2) {
				t.Fatalf("Prices = %d prices, %v; want 2 prices", len(prices), err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Prices error = %v, want one containing %q", err, tc.wantErr)
			}
			if got := len(srv.Requests()); got != tc.wantReqs {
				t.Errorf("got %d requests, want %d", got, tc.wantReqs)
			}
		})
	}
}

func TestMalformedPayloadsGiveClearErrors(t *testing.T) {
	page1 := func(t *testing.T) []byte { return gcptest.Fixture(t, "cloudbilling.skus.list.page1.json") }
	tests := []struct {
		name    string
		page    func(t *testing.T) []byte
		wantErr []string
	}{
		{"not JSON", func(*testing.T) []byte { return []byte("<html>502 Bad Gateway</html>") },
			[]string{"listing services/6F81-5844-456A SKUs"}},
		{"wrong field type", func(*testing.T) []byte { return []byte(`{"skus":[{"skuId":5}]}`) },
			[]string{"listing services/6F81-5844-456A SKUs", "skuId"}},
		{"RAM priced per month", func(t *testing.T) []byte {
			return bytes.Replace(page1(t), []byte(`"usageUnit": "GiBy.h"`), []byte(`"usageUnit": "GiBy.mo"`), 1)
		}, []string{"sku 2390-DCAF-DA38", "A2 Instance Ram", `usageUnit "GiBy.mo"`}},
		{"other currency", func(t *testing.T) []byte {
			return bytes.Replace(page1(t), []byte(`"currencyCode": "USD"`), []byte(`"currencyCode": "EUR"`), 1)
		}, []string{"sku 039F-D0DA-4055", `currencyCode is "EUR"`}},
		{"no pricing info", func(t *testing.T) []byte {
			return bytes.Replace(page1(t), []byte(`"pricingInfo": [`), []byte(`"pricingInfo": [], "x": [`), 1)
		}, []string{"sku 039F-D0DA-4055", "pricingInfo is empty"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := gcptest.NewServer(t, "my-project")
			srv.SetSKUPages(tc.page(t))
			_, err := newSource(t, srv, a2HighGPU1G).Prices(context.Background())
			if err == nil {
				t.Fatalf("Prices did not fail")
			}
			t.Logf("error: %v", err)
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	ok := gcp.Config{Region: "us-central1", Zones: []string{"us-central1-a"}}
	tests := []struct {
		name    string
		mutate  func(*gcp.Config)
		wantErr string
	}{
		{"valid", func(*gcp.Config) {}, ""},
		{"no region", func(c *gcp.Config) { c.Region = "" }, "region is empty"},
		{"no zones", func(c *gcp.Config) { c.Zones = nil }, "zones is empty"},
		{"negative page size", func(c *gcp.Config) { c.PageSize = -1 }, "pageSize"},
		{"bad retry", func(c *gcp.Config) { c.Retry = gcpapi.RetryPolicy{Initial: 1, Max: 1, Multiplier: 2} }, "retry.maxAttempts"},
	}
	for _, tc := range tests {
		cfg := ok
		tc.mutate(&cfg)
		err := cfg.Validate()
		if (tc.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}
