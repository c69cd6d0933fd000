package aws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/tiler-dev/tiler/cloudprovider"
	awspricing "github.com/tiler-dev/tiler/pricing/aws"
)

// EventBridge detail types of the EC2 events the queue receives.
const (
	DetailSpotInterruption = "EC2 Spot Instance Interruption Warning"
	DetailRebalance        = "EC2 Instance Rebalance Recommendation"
	DetailStateChange      = "EC2 Instance State-change Notification"
)

// maxMessages is the most SQS returns per ReceiveMessage.
const maxMessages = 10

// InterruptionSource reads EC2 interruption events from the SQS queue an EventBridge rule
// feeds. It is safe for concurrent use, though one poller is the intended use.
type InterruptionSource struct {
	client     SQSAPI
	queueURL   string
	wait       int32
	visibility int32

	malformed atomic.Int64
	ignored   atomic.Int64
}

var _ cloudprovider.InterruptionAcker = (*InterruptionSource)(nil)

// NewInterruptionSource builds a source with an SQS client from the default AWS configuration
// (optFns are applied last).
func NewInterruptionSource(ctx context.Context, cfg Config, optFns ...func(*config.LoadOptions) error) (*InterruptionSource, error) {
	if err := cfg.ValidateInterruptions(); err != nil {
		return nil, fmt.Errorf("aws interruption config: %w", err)
	}
	awsCfg, err := awspricing.LoadAWSConfig(ctx, cfg.Region, optFns...)
	if err != nil {
		return nil, err
	}
	client := sqs.NewFromConfig(awsCfg, func(o *sqs.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = awssdk.String(cfg.Endpoint)
		}
	})
	return NewInterruptionSourceFromClient(cfg, client)
}

// NewInterruptionSourceFromClient builds a source over client.
func NewInterruptionSourceFromClient(cfg Config, client SQSAPI) (*InterruptionSource, error) {
	if err := cfg.ValidateInterruptions(); err != nil {
		return nil, fmt.Errorf("aws interruption config: %w", err)
	}
	if client == nil {
		return nil, errors.New("aws interruption source: SQS client must be set")
	}
	s := &InterruptionSource{client: client, queueURL: cfg.QueueURL, wait: cfg.WaitTimeSeconds, visibility: cfg.VisibilityTimeoutSeconds}
	if s.wait == 0 {
		s.wait = DefaultWaitTimeSeconds
	}
	if s.visibility == 0 {
		s.visibility = DefaultVisibilityTimeoutSeconds
	}
	return s, nil
}

// Poll long-polls the queue once (up to WaitTimeSeconds) and parses the messages. The messages of
// the notices it returns stay in the queue, invisible for VisibilityTimeoutSeconds, until Ack
// deletes them: one not acknowledged by then is received again. Messages that cannot be parsed
// are deleted at once and counted by Malformed; events Tiler does not act on (other detail types,
// an instance becoming pending or running) are deleted at once and counted by Ignored. Neither is
// an error, and a failed delete of one only brings it back later.
//
// Errors: a failed ReceiveMessage (including an MD5OfBody mismatch, which the SDK checks) returns
// an error and no notices; the messages become visible again after the visibility timeout and
// come back.
func (s *InterruptionSource) Poll(ctx context.Context) ([]cloudprovider.Interruption, error) {
	out, err := s.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    awssdk.String(s.queueURL),
		MaxNumberOfMessages:         maxMessages,
		WaitTimeSeconds:             s.wait,
		VisibilityTimeout:           s.visibility,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp},
	})
	if err != nil {
		return nil, fmt.Errorf("receiving interruption messages from %s: %w", s.queueURL, err)
	}
	var notices []cloudprovider.Interruption
	var discard []string
	for _, m := range out.Messages {
		n, ok, err := ParseEvent([]byte(awssdk.ToString(m.Body)))
		switch {
		case err != nil:
			s.malformed.Add(1)
			discard = append(discard, awssdk.ToString(m.ReceiptHandle))
		case !ok:
			s.ignored.Add(1)
			discard = append(discard, awssdk.ToString(m.ReceiptHandle))
		default:
			n.Receipt = awssdk.ToString(m.ReceiptHandle)
			notices = append(notices, n)
		}
	}
	_ = s.deleteAll(ctx, discard) // one that stays comes back, and is discarded again
	return notices, nil
}

// Ack deletes the notices' messages by their receipt handles, so that they are not received
// again. It fails only when there were messages and none was deleted; the undeleted ones come back
// after the visibility timeout as duplicates, which the controller handles again harmlessly.
// Each message is deleted by DeleteMessage: DeleteMessageBatch would save calls, but Ack sees at
// most one receive's ten messages, and one API call fewer keeps SQSAPI (and the IAM policy
// checked against it) as it is.
func (s *InterruptionSource) Ack(ctx context.Context, notices []cloudprovider.Interruption) error {
	handles := make([]string, 0, len(notices))
	for _, n := range notices {
		handles = append(handles, n.Receipt)
	}
	return s.deleteAll(ctx, handles)
}

// deleteAll deletes the messages of the receipt handles; it fails only when there were some and
// none was deleted.
func (s *InterruptionSource) deleteAll(ctx context.Context, handles []string) error {
	var firstErr error
	deleted := 0
	for _, h := range handles {
		_, err := s.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: awssdk.String(s.queueURL), ReceiptHandle: awssdk.String(h)})
		if err == nil {
			deleted++
		} else if firstErr == nil {
			firstErr = fmt.Errorf("deleting message with receipt handle %s: %w", h, err)
		}
	}
	if len(handles) > 0 && deleted == 0 {
		return fmt.Errorf("acknowledging interruption messages from %s: %w", s.queueURL, firstErr)
	}
	return nil
}

// Malformed returns how many messages were deleted because they could not be parsed.
func (s *InterruptionSource) Malformed() int64 { return s.malformed.Load() }

// Ignored returns how many well-formed events were deleted without a notice.
func (s *InterruptionSource) Ignored() int64 { return s.ignored.Load() }

// event is the EventBridge envelope of an EC2 event, as delivered raw to SQS.
type event struct {
	DetailType string    `json:"detail-type"`
	Source     string    `json:"source"`
	Time       time.Time `json:"time"`
	Detail     struct {
		InstanceID string `json:"instance-id"`
		State      string `json:"state"`
	} `json:"detail"`
}

// actionableStates are the state changes that take an instance out of service.
var actionableStates = map[string]bool{"stopping": true, "stopped": true, "shutting-down": true, "terminated": true}

// ParseEvent turns an EventBridge EC2 event into a notice. ok is false for a well-formed event
// Tiler does not act on. Errors name the missing or bad field.
func ParseEvent(body []byte) (n cloudprovider.Interruption, ok bool, err error) {
	var e event
	if err := json.Unmarshal(body, &e); err != nil {
		return n, false, fmt.Errorf("decoding EventBridge event: %w", err)
	}
	if e.DetailType == "" {
		return n, false, errors.New("EventBridge event: detail-type is missing")
	}
	kind, known := map[string]cloudprovider.InterruptionKind{
		DetailSpotInterruption: cloudprovider.SpotInterruption,
		DetailRebalance:        cloudprovider.RebalanceRecommendation,
		DetailStateChange:      cloudprovider.StateChange,
	}[e.DetailType]
	if !known || e.Source != "aws.ec2" {
		return n, false, nil
	}
	switch {
	case e.Detail.InstanceID == "":
		return n, false, fmt.Errorf("%s event: detail.instance-id is missing", e.DetailType)
	case e.Time.IsZero():
		return n, false, fmt.Errorf("%s event: time is missing", e.DetailType)
	case kind == cloudprovider.StateChange && e.Detail.State == "":
		return n, false, fmt.Errorf("%s event: detail.state is missing", e.DetailType)
	case kind == cloudprovider.StateChange && !actionableStates[e.Detail.State]:
		return n, false, nil
	}
	n = cloudprovider.Interruption{InstanceID: e.Detail.InstanceID, Kind: kind, At: e.Time.UTC()}
	switch kind {
	case cloudprovider.StateChange:
		n.State = e.Detail.State
		n.Deadline = n.At
	case cloudprovider.SpotInterruption:
		n.Deadline = n.At.Add(cloudprovider.SpotInterruptionNotice)
	}
	return n, true, nil
}
