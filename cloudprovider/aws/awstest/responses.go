package awstest

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Content types the real services send.
const (
	ContentTypeEC2     = "text/xml;charset=UTF-8"
	ContentTypePricing = "application/x-amz-json-1.1"
	ContentTypeSQS     = "application/x-amz-json-1.0"
	ContentTypeSSM     = "application/x-amz-json-1.1"
)

// FixtureDir is the folder of recorded AWS payloads, found relative to this source file so that
// tests in any package can read it.
func FixtureDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "cloud-fixtures", "aws")
}

// Fixture returns the bytes of a recorded payload, failing the test if it is missing.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(FixtureDir(), name))
	if err != nil {
		t.Fatalf("reading fixture: %v", err)
	}
	return b
}

// XML is an HTTP 200 EC2 response with the given body.
func XML(body []byte) Response {
	return Response{Status: http.StatusOK, ContentType: ContentTypeEC2, Body: body}
}

// XMLFixture is an HTTP 200 EC2 response with a fixture's body.
func XMLFixture(t testing.TB, name string) Response { return XML(Fixture(t, name)) }

// XMLFixtureStatus is an EC2 response with a fixture's body and the given status, for the
// recorded error payloads.
func XMLFixtureStatus(t testing.TB, name string, status int) Response {
	r := XMLFixture(t, name)
	r.Status = status
	return r
}

// EC2Error is an EC2 error response in the query protocol's <Response><Errors> form.
func EC2Error(status int, code, message string) Response {
	body := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>awstest-request</RequestID></Response>`,
		html.EscapeString(code), html.EscapeString(message))
	return Response{Status: status, ContentType: ContentTypeEC2, Body: []byte(body)}
}

// PricingJSON is an HTTP 200 Pricing API response with the given JSON body.
func PricingJSON(body []byte) Response {
	return Response{Status: http.StatusOK, ContentType: ContentTypePricing, Body: body}
}

// PricingError is a JSON 1.1 error response.
func PricingError(status int, errType, message string) Response {
	return jsonError(status, ContentTypePricing, errType, message)
}

// SQSJSON is an HTTP 200 SQS response with the given JSON body.
func SQSJSON(body []byte) Response {
	return Response{Status: http.StatusOK, ContentType: ContentTypeSQS, Body: body}
}

// SQSError is a JSON 1.0 error response.
func SQSError(status int, errType, message string) Response {
	return jsonError(status, ContentTypeSQS, errType, message)
}

// SSMError is a JSON 1.1 error response of SSM.
func SSMError(status int, errType, message string) Response {
	return jsonError(status, ContentTypeSSM, errType, message)
}

func jsonError(status int, contentType, errType, message string) Response {
	body, _ := json.Marshal(map[string]string{"__type": errType, "message": message})
	return Response{
		Status: status, ContentType: contentType, Body: body,
		Header: map[string]string{"X-Amzn-ErrorType": errType},
	}
}

// Message is one SQS message to deliver.
type Message struct {
	ID, ReceiptHandle, Body string
	// BadMD5 sends a wrong MD5OfBody, which the SDK rejects.
	BadMD5 bool
}

// MD5OfBody is the hex MD5 digest SQS sends with a message body (the SDK checks it).
func MD5OfBody(body string) string {
	sum := md5.Sum([]byte(body))
	return hex.EncodeToString(sum[:])
}

// ReceiveMessage is an SQS ReceiveMessage response carrying msgs with correct MD5OfBody values.
func ReceiveMessage(msgs ...Message) Response {
	type wire struct {
		MessageId, ReceiptHandle, MD5OfBody, Body string
		Attributes                                map[string]string
	}
	out := struct {
		Messages []wire `json:",omitempty"`
	}{}
	for i, m := range msgs {
		w := wire{MessageId: m.ID, ReceiptHandle: m.ReceiptHandle, Body: m.Body, MD5OfBody: MD5OfBody(m.Body),
			Attributes: map[string]string{"SentTimestamp": "1784556000000"}}
		if w.MessageId == "" {
			w.MessageId = fmt.Sprintf("awstest-message-%d", i)
		}
		if w.ReceiptHandle == "" {
			w.ReceiptHandle = "receipt-" + w.MessageId
		}
		if m.BadMD5 {
			w.MD5OfBody = MD5OfBody(m.Body + "tampered")
		}
		out.Messages = append(out.Messages, w)
	}
	body, _ := json.Marshal(out)
	return SQSJSON(body)
}

// Empty is the SQS answer to a DeleteMessage or a long poll that timed out: `{}`.
func Empty() Response { return SQSJSON([]byte("{}")) }
