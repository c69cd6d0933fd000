package aws

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/cloudprovider/aws/awstest"
)

const instanceID = "i-0123456789abcdef0"

func newTestInterruptions(t *testing.T, srv *awstest.Server) *InterruptionSource {
	t.Helper()
	s, err := NewInterruptionSource(context.Background(), testConfig(srv.URL), srv.LoadOptions()...)
	if err != nil {
		t.Fatalf("NewInterruptionSource: %v", err)
	}
	return s
}

func deletedHandles(srv *awstest.Server, t *testing.T) []string {
	var out []string
	for _, r := range srv.Requests("DeleteMessage") {
		var body struct{ QueueUrl, ReceiptHandle string }
		if err := r.DecodeJSON(&body); err != nil {
			t.Fatal(err)
		}
		out = append(out, body.ReceiptHandle)
	}
	return out
}

func TestPollRecordedMessages(t *testing.T) {
	srv := awstest.NewServer(t)
	srv.Enqueue("ReceiveMessage", awstest.SQSJSON(awstest.Fixture(t, "SQS.ReceiveMessage.response.json")))
	srv.Always("DeleteMessage", awstest.Empty())
	s := newTestInterruptions(t, srv)

	got, err := s.Poll(context.Background())
	if err != nil {
		t.Fatalf("Poll: %v", err)
	}
	want := []cloudprovider.Interruption{
		{InstanceID: instanceID, Kind: cloudprovider.RebalanceRecommendation, At: time.Date(2026, 7, 20, 13, 58, 0, 0, time.UTC)},
		{InstanceID: instanceID, Kind: cloudprovider.SpotInterruption, At: time.Date(2026, 7, 20, 14, 0, 0, 0, time.UTC), Deadline: time.Date(2026, 7, 20, 14, 2, 0, 0, time.UTC)},
	}
	wantDeleted := []string{"AQEBzWwaftRI0KuVm4tP+/7q1rGgNqicHq...EXAMPLE0", "AQEBzWwaftRI0KuVm4tP+/7q1rGgNqicHq...EXAMPLE1"}
	want[0].Receipt, want[1].Receipt = wantDeleted[0], wantDeleted[1]
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notices (-want +got):\n%s", diff)
	}
	if d := deletedHandles(srv, t); len(d) != 0 {
		t.Errorf("Poll deleted %v; the notices' messages stay until Ack", d)
	}
	if err := s.Ack(context.Background(), got); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	if diff := cmp.Diff(wantDeleted, deletedHandles(srv, t)); diff != "" {
		t.Errorf("deleted by Ack (-want +got):\n%s", diff)
	}
	// The request matches the recorded SDK request (SQS.ReceiveMessage.request.txt), our queue.
	var body map[string]any
	req := srv.Requests("ReceiveMessage")[0]
	if err := req.DecodeJSON(&body); err != nil {
		t.Fatal(err)
	}
	wantBody := map[string]any{"MaxNumberOfMessages": 10.0, "MessageSystemAttributeNames": []any{"SentTimestamp"},
		"QueueUrl": testConfig("").QueueURL, "VisibilityTimeout": 20.0, "WaitTimeSeconds": 20.0}
	if diff := cmp.Diff(wantBody, body); diff != "" {
		t.Errorf("ReceiveMessage body (-want +got):\n%s", diff)
	}
	if got := req.Header.Get("X-Amz-Target"); got != "AmazonSQS.ReceiveMessage" {
		t.Errorf("X-Amz-Target = %q", got)
	}
}

func TestPollEventKinds(t *testing.T) {
	stateChange := func(state string) string {
		return strings.Replace(string(awstest.Fixture(t, "EventBridge.InstanceStateChange.json")), `"shutting-down"`, `"`+state+`"`, 1)
	}
	msgs := []awstest.Message{
		{Body: string(awstest.Fixture(t, "EventBridge.SpotInterruptionWarning.json"))},
		{Body: string(awstest.Fixture(t, "EventBridge.RebalanceRecommendation.json"))},
		{Body: string(awstest.Fixture(t, "EventBridge.InstanceStateChange.json"))},
		{Body: stateChange("running")}, // ignored: not leaving service
		{Body: `{"detail-type":"AWS Health Event","source":"aws.health","time":"2026-07-20T14:03:00Z","detail":{}}`},                    // ignored
		{Body: `{"detail-type": "EC2 Spot Instance Interruption Warning", "source": "aws.ec2", "detail": {`},                            // malformed JSON
		{Body: `{"detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","time":"2026-07-20T14:00:00Z","detail":{}}`}, // no instance-id
		{Body: `not an event at all`},
	}
	srv := awstest.NewServer(t)
	srv.Enqueue("ReceiveMessage", awstest.ReceiveMessage(msgs...))
	srv.Always("DeleteMessage", awstest.Empty())
	s := newTestInterruptions(t, srv)

	got, err := s.Poll(context.Background())
	if err != nil {
		t.Fatalf("Poll: %v", err)
	}
	want := []cloudprovider.Interruption{
		{InstanceID: instanceID, Kind: cloudprovider.SpotInterruption, At: time.Date(2026, 7, 20, 14, 0, 0, 0, time.UTC), Deadline: time.Date(2026, 7, 20, 14, 2, 0, 0, time.UTC)},
		{InstanceID: instanceID, Kind: cloudprovider.RebalanceRecommendation, At: time.Date(2026, 7, 20, 13, 58, 0, 0, time.UTC)},
		{InstanceID: instanceID, Kind: cloudprovider.StateChange, State: "shutting-down", At: time.Date(2026, 7, 20, 14, 2, 0, 0, time.UTC), Deadline: time.Date(2026, 7, 20, 14, 2, 0, 0, time.UTC)},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(cloudprovider.Interruption{}, "Receipt")); diff != "" {
		t.Errorf("notices (-want +got):\n%s", diff)
	}
	if s.Malformed() != 3 || s.Ignored() != 2 {
		t.Errorf("malformed %d (want 3), ignored %d (want 2)", s.Malformed(), s.Ignored())
	}
	if n := len(srv.Requests("DeleteMessage")); n != 5 {
		t.Errorf("deleted %d messages, want the 5 malformed and ignored ones (the notices' stay until Ack)", n)
	}
}

func TestPollFailures(t *testing.T) {
	spot := awstest.Message{Body: string(awstest.Fixture(t, "EventBridge.SpotInterruptionWarning.json"))}
	tests := []struct {
		name        string
		receive     []awstest.Response
		wantErr     string // "" for success
		wantNotices int
		wantReceive int
	}{
		{name: "empty long poll", receive: []awstest.Response{awstest.SQSJSON(awstest.Fixture(t, "SQS.ReceiveMessage.empty.response.json"))},
			wantReceive: 1},
		{name: "throttled with HTTP 429 then delivered",
			receive:     []awstest.Response{awstest.SQSError(http.StatusTooManyRequests, "ThrottlingException", "Rate exceeded"), awstest.ReceiveMessage(spot)},
			wantNotices: 1, wantReceive: 2},
		{name: "HTTP 500 then delivered",
			receive:     []awstest.Response{awstest.SQSError(http.StatusInternalServerError, "InternalError", "oops"), awstest.ReceiveMessage(spot)},
			wantNotices: 1, wantReceive: 2},
		{name: "MD5OfBody mismatch is refused by the SDK",
			receive: []awstest.Response{awstest.ReceiveMessage(awstest.Message{Body: spot.Body, BadMD5: true})},
			wantErr: "invalid checksum", wantReceive: 1},
		{name: "queue does not exist",
			receive: []awstest.Response{awstest.SQSError(http.StatusBadRequest, "QueueDoesNotExist", "The specified queue does not exist.")},
			wantErr: "QueueDoesNotExist", wantReceive: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := awstest.NewServer(t)
			srv.Enqueue("ReceiveMessage", tt.receive...)
			s := newTestInterruptions(t, srv)
			got, err := s.Poll(context.Background())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || got != nil {
					t.Fatalf("Poll = %v, %v; want no notices and an error containing %q", got, err, tt.wantErr)
				}
			} else if err != nil || len(got) != tt.wantNotices {
				t.Fatalf("Poll = %d notices, %v; want %d", len(got), err, tt.wantNotices)
			}
			if n := len(srv.Requests("ReceiveMessage")); n != tt.wantReceive {
				t.Errorf("ReceiveMessage calls = %d, want %d", n, tt.wantReceive)
			}
		})
	}
}

// TestAckFailures: Ack fails only when no message could be deleted; the others come back later.
func TestAckFailures(t *testing.T) {
	notices := []cloudprovider.Interruption{{InstanceID: instanceID, Receipt: "r1"}, {InstanceID: instanceID, Receipt: "r2"}}
	denied := awstest.SQSError(http.StatusForbidden, "AccessDenied", "no")
	for _, tt := range []struct {
		name    string
		deletes []awstest.Response // in order; then success
		wantErr string             // "" for success
	}{
		{name: "every delete succeeds"},
		{name: "one delete fails: that message comes back later", deletes: []awstest.Response{denied}},
		{name: "every delete fails", deletes: []awstest.Response{denied, denied}, wantErr: "acknowledging interruption messages"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := awstest.NewServer(t)
			srv.Enqueue("DeleteMessage", tt.deletes...)
			srv.Always("DeleteMessage", awstest.Empty())
			err := newTestInterruptions(t, srv).Ack(context.Background(), notices)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Ack = %v, want error containing %q", err, tt.wantErr)
			}
			if diff := cmp.Diff([]string{"r1", "r2"}, deletedHandles(srv, t)); diff != "" {
				t.Errorf("deleted (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPollRedeliversUnacked: a notice polled but never acknowledged (the controller died before
// annotating its node) is received again once the visibility timeout has passed, with a new
// receipt; an acknowledged one never comes again.
func TestPollRedeliversUnacked(t *testing.T) {
	srv := awstest.NewServer(t)
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 7, 20, 14, 0, 0, 0, time.UTC))
	spot := string(awstest.Fixture(t, "EventBridge.SpotInterruptionWarning.json"))
	q := srv.ServeQueue(clk, awstest.Message{ID: "acked", Body: spot}, awstest.Message{ID: "lost", Body: spot})
	cfg := testConfig(srv.URL)
	cfg.WaitTimeSeconds = 1
	s, err := NewInterruptionSource(context.Background(), cfg, srv.LoadOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := s.Poll(ctx)
	if err != nil || len(first) != 2 {
		t.Fatalf("first Poll = %+v, %v; want both notices", first, err)
	}
	if err := s.Ack(ctx, first[:1]); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	if got, err := s.Poll(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Poll within the visibility timeout = %+v, %v; want nothing", got, err)
	}
	clk.SetTime(clk.Now().Add(time.Duration(DefaultVisibilityTimeoutSeconds) * time.Second))
	again, err := s.Poll(ctx)
	if err != nil || len(again) != 1 || again[0].Receipt != "lost-receive-2" {
		t.Fatalf("Poll after the visibility timeout = %+v, %v; want the unacknowledged notice alone, received a second time", again, err)
	}
	if err := s.Ack(ctx, again); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	clk.SetTime(clk.Now().Add(time.Hour))
	if got, err := s.Poll(ctx); err != nil || len(got) != 0 || q.Len() != 0 {
		t.Fatalf("Poll after both were acknowledged = %+v, %v (queue holds %d); want nothing", got, err, q.Len())
	}
}

func TestInterruptionConfigValidation(t *testing.T) {
	cfg := testConfig("")
	cfg.QueueURL, cfg.WaitTimeSeconds = "", 30
	_, err := NewInterruptionSourceFromClient(cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "queueURL must be set") || !strings.Contains(err.Error(), "waitTimeSeconds 30") {
		t.Fatalf("error = %v", err)
	}
}
