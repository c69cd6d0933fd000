package awstest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
)

// Service names a wire protocol the server speaks.
type Service string

const (
	// EC2 is the EC2 query protocol: form-encoded POST, XML responses.
	EC2 Service = "ec2"
	// Pricing is the Price List Query API: JSON 1.1 with X-Amz-Target AWSPriceListService.*.
	Pricing Service = "pricing"
	// SQS is SQS over JSON 1.0 with X-Amz-Target AmazonSQS.*.
	SQS Service = "sqs"
	// SSM is Systems Manager over JSON 1.1 with X-Amz-Target AmazonSSM.*.
	SSM Service = "ssm"
)

// Region is the region the test clients are configured for.
const Region = "us-east-1"

// MaxAttempts is the SDK retryer's attempt limit in tests: enough to see a throttled call
// succeed on its second or third attempt.
const MaxAttempts = 3

// Request is one recorded request.
type Request struct {
	Service Service
	// Action is the EC2 Action or the operation after the dot in X-Amz-Target.
	Action string
	// Form is the parsed body of an EC2 request.
	Form url.Values
	// Body is the raw body (JSON for Pricing and SQS).
	Body   []byte
	Header http.Header
	// At is when the request arrived.
	At time.Time
	// Partial asks the handler of a CreateFleet for a partial fleet (Trouble.PartialFleetShare).
	Partial bool
}

// DecodeJSON unmarshals a JSON request body into v.
func (r Request) DecodeJSON(v any) error { return json.Unmarshal(r.Body, v) }

// EC2Filters returns the Filter.N.Name / Filter.N.Value.M pairs of an EC2 request as a map
// from filter name to values.
func (r Request) EC2Filters() map[string][]string {
	out := map[string][]string{}
	for n := 1; ; n++ {
		name := r.Form.Get(fmt.Sprintf("Filter.%d.Name", n))
		if name == "" {
			return out
		}
		for m := 1; ; m++ {
			v, ok := r.Form[fmt.Sprintf("Filter.%d.Value.%d", n, m)]
			if !ok {
				break
			}
			out[name] = append(out[name], v...)
		}
	}
}

// TagSpecifications returns the TagSpecification.N of an EC2 request as a map from resource type
// to its tags.
func (r Request) TagSpecifications() map[string]map[string]string {
	out := map[string]map[string]string{}
	for n := 1; ; n++ {
		rt := r.Form.Get(fmt.Sprintf("TagSpecification.%d.ResourceType", n))
		if rt == "" {
			return out
		}
		tags := map[string]string{}
		for m := 1; ; m++ {
			k, ok := r.Form[fmt.Sprintf("TagSpecification.%d.Tag.%d.Key", n, m)]
			if !ok {
				break
			}
			tags[k[0]] = r.Form.Get(fmt.Sprintf("TagSpecification.%d.Tag.%d.Value", n, m))
		}
		out[rt] = tags
	}
}

// FormList returns the values of prefix.1, prefix.2, ... of an EC2 request, e.g. InstanceId.
func (r Request) FormList(prefix string) []string {
	var out []string
	for n := 1; ; n++ {
		v, ok := r.Form[fmt.Sprintf("%s.%d", prefix, n)]
		if !ok {
			return out
		}
		out = append(out, v...)
	}
}

// Response is what the server answers with.
type Response struct {
	Status      int
	ContentType string
	Header      map[string]string
	Body        []byte
}

// Handler answers a request that has no queued response.
type Handler func(Request) Response

// Server is the fake endpoint. Its zero value is not usable; call NewServer.
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	requests []Request
	queued   map[string][]Response
	handlers map[string]Handler
	trouble  *trouble
}

// NewServer starts a server and stops it when the test ends.
func NewServer(t testing.TB) *Server {
	s := &Server{queued: map[string][]Response{}, handlers: map[string]Handler{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Enqueue adds responses that the next calls of action get, in order, before the handler.
func (s *Server) Enqueue(action string, rs ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queued[action] = append(s.queued[action], rs...)
}

// Handle sets the handler for action, used once its queue is empty.
func (s *Server) Handle(action string, h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[action] = h
}

// Always answers every call of action with r once the queue is empty.
func (s *Server) Always(action string, r Response) {
	s.Handle(action, func(Request) Response { return r })
}

// Requests returns the recorded requests of action, or of every action when action is empty.
func (s *Server) Requests(action string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.requests {
		if action == "" || r.Action == action {
			out = append(out, r)
		}
	}
	return out
}

// LoadOptions returns the options for config.LoadDefaultConfig that a test passes to a
// constructor: region, static credentials, no shared config files, no IMDS, and a retryer that
// keeps MaxAttempts but waits no time between attempts and has no retry quota.
func (s *Server) LoadOptions() []func(*config.LoadOptions) error {
	return []func(*config.LoadOptions) error{
		config.WithRegion(Region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIDTEST", "SECRETTEST", "")),
		config.WithSharedConfigFiles([]string{}),
		config.WithSharedCredentialsFiles([]string{}),
		config.WithEC2IMDSClientEnableState(imds.ClientDisabled),
		config.WithRetryer(FastRetryer),
	}
}

// AWSConfig loads an aws.Config with LoadOptions.
func (s *Server) AWSConfig(t testing.TB) aws.Config {
	cfg, err := config.LoadDefaultConfig(context.Background(), s.LoadOptions()...)
	if err != nil {
		t.Fatalf("loading AWS config: %v", err)
	}
	return cfg
}

// FastRetryer is the SDK's standard retryer with no backoff delay and no client-side retry
// quota, so throttling tests exercise real retries in microseconds.
func FastRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = MaxAttempts
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		o.RateLimiter = ratelimit.None
	})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	req, err := parseRequest(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, ok := s.respondInTrouble(r, req)
	if !ok {
		return // the client gave up during the latency
	}
	for k, v := range resp.Header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", resp.ContentType)
	w.Header().Set("X-Amzn-RequestId", "awstest-request")
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}

// respondInTrouble answers req as the trouble window says (Trouble): late, with the window's
// error before or after serving it, or as a partial fleet; false when the client went away
// during the latency.
func (s *Server) respondInTrouble(r *http.Request, req Request) (Response, bool) {
	req.At = time.Now()
	s.mu.Lock()
	v := s.troubleLocked(req, req.At)
	s.mu.Unlock()
	req.Partial = v.partial
	if v.latency > 0 {
		t := time.NewTimer(v.latency)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			s.record(req)
			return Response{}, false
		case <-t.C:
		}
	}
	if v.fail && !v.after {
		s.record(req)
		return v.err, true
	}
	resp := s.respond(req)
	if v.fail {
		return v.err, true
	}
	return resp, true
}

func (s *Server) record(req Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
}

func (s *Server) respond(req Request) Response {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	var h Handler
	if q := s.queued[req.Action]; len(q) > 0 {
		s.queued[req.Action] = q[1:]
		s.mu.Unlock()
		return q[0]
	}
	h = s.handlers[req.Action]
	s.mu.Unlock()
	if h != nil {
		return h(req)
	}
	msg := fmt.Sprintf("awstest: no response scripted for %s %s", req.Service, req.Action)
	switch req.Service {
	case EC2:
		return EC2Error(http.StatusBadRequest, "AwstestUnscripted", msg)
	case Pricing:
		return PricingError(http.StatusBadRequest, "AwstestUnscripted", msg)
	default:
		return SQSError(http.StatusBadRequest, "AwstestUnscripted", msg)
	}
}

func parseRequest(r *http.Request) (Request, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return Request{}, err
	}
	req := Request{Body: body, Header: r.Header.Clone()}
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		prefix, action, ok := strings.Cut(target, ".")
		if !ok {
			return Request{}, fmt.Errorf("awstest: malformed X-Amz-Target %q", target)
		}
		req.Action = action
		switch prefix {
		case "AWSPriceListService":
			req.Service = Pricing
		case "AmazonSQS":
			req.Service = SQS
		case "AmazonSSM":
			req.Service = SSM
		default:
			return Request{}, fmt.Errorf("awstest: unknown X-Amz-Target service %q", prefix)
		}
		return req, nil
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return Request{}, fmt.Errorf("awstest: parsing EC2 form body: %w", err)
	}
	req.Service, req.Form, req.Action = EC2, form, form.Get("Action")
	if req.Action == "" {
		return Request{}, fmt.Errorf("awstest: request has neither X-Amz-Target nor Action")
	}
	return req, nil
}
