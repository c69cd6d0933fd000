// Package awstest is a fake AWS endpoint for wire-level tests: one httptest server that speaks
// EC2 (query protocol, XML responses), the Pricing API (JSON 1.1) and SQS (JSON 1.0), so that the
// real aws-sdk-go-v2 clients can be pointed at it through BaseEndpoint.
//
// The server records every request (service, action, parsed form or JSON body, headers) and
// answers from a per-action queue of scripted responses, falling back to a per-action handler.
// Queued responses are how tests inject failures: throttling (RequestLimitExceeded with HTTP 503,
// HTTP 429), server errors, malformed payloads. An action with neither a queued response nor a
// handler is answered with an error in that service's wire format, so a test that forgot to
// script a call fails with a clear message rather than hanging.
//
// Fixtures are the recorded payloads in testdata/cloud-fixtures/aws (see its README for
// provenance); Fixture reads them.
package awstest
