package awstest

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Queue is an SQS queue the Server serves (ServeQueue) as SQS does, for tests of redelivery:
// ReceiveMessage hands out up to MaxNumberOfMessages visible messages, each with a new receipt
// handle, and hides them for the request's VisibilityTimeout (on the Queue's clock); a message
// not deleted by then is received again. DeleteMessage deletes the message of a receipt handle;
// a handle of an earlier receive of a message received again since deletes nothing, and neither
// fails (SQS does not promise either way). A long poll of an empty queue returns at once.
type Queue struct {
	mu   sync.Mutex
	clk  clock.PassiveClock
	msgs []*queuedMessage
	sent int
}

type queuedMessage struct {
	Message
	visibleAt time.Time
	receives  int
}

// ServeQueue answers ReceiveMessage and DeleteMessage from a new Queue holding msgs, on clk.
func (s *Server) ServeQueue(clk clock.PassiveClock, msgs ...Message) *Queue {
	q := &Queue{clk: clk}
	q.Send(msgs...)
	s.Handle("ReceiveMessage", q.receive)
	s.Handle("DeleteMessage", q.delete)
	return q
}

// Send adds messages, visible at once; those without an ID are numbered.
func (q *Queue) Send(msgs ...Message) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, m := range msgs {
		q.sent++
		if m.ID == "" {
			m.ID = fmt.Sprintf("awstest-queued-%d", q.sent)
		}
		q.msgs = append(q.msgs, &queuedMessage{Message: m})
	}
}

// Len is how many messages the queue holds, visible or not.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.msgs)
}

func (q *Queue) receive(r Request) Response {
	var in struct {
		MaxNumberOfMessages int
		VisibilityTimeout   int
	}
	if err := r.DecodeJSON(&in); err != nil {
		return SQSError(http.StatusBadRequest, "InvalidParameterValue", err.Error())
	}
	if in.MaxNumberOfMessages == 0 {
		in.MaxNumberOfMessages = 1
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clk.Now()
	var out []Message
	for _, m := range q.msgs {
		if len(out) == in.MaxNumberOfMessages {
			break
		}
		if now.Before(m.visibleAt) {
			continue
		}
		m.receives++
		m.visibleAt = now.Add(time.Duration(in.VisibilityTimeout) * time.Second)
		m.ReceiptHandle = fmt.Sprintf("%s-receive-%d", m.ID, m.receives)
		out = append(out, m.Message)
	}
	return ReceiveMessage(out...)
}

func (q *Queue) delete(r Request) Response {
	var in struct{ ReceiptHandle string }
	if err := r.DecodeJSON(&in); err != nil {
		return SQSError(http.StatusBadRequest, "InvalidParameterValue", err.Error())
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.msgs = slices.DeleteFunc(q.msgs, func(m *queuedMessage) bool { return m.ReceiptHandle == in.ReceiptHandle })
	return Empty()
}
