package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/tiler-dev/tiler/api"
)

// EventKind says what happened to an instance.
type EventKind string

// The event kinds of the log.
const (
	// EventLaunched is a purchase: Create started a new instance (never written for an idempotent
	// repeat of a launch ID).
	EventLaunched EventKind = "launched"
	// EventDeleted is the end of an instance, by Delete (reason "requested") or by the cloud
	// reclaiming an interrupted spot instance (reason "spot-reclaimed").
	EventDeleted EventKind = "deleted"
	// EventInterrupted is a spot interruption notice sent by Interrupt.
	EventInterrupted EventKind = "interrupted"
	// EventMIGReconfigureFailed is the simulated MIG manager refusing a node's new
	// nvidia.com/mig.config (the reason says why).
	EventMIGReconfigureFailed EventKind = "mig-reconfigure-failed"
)

// Reasons of EventDeleted.
const (
	// ReasonRequested is a deletion by Delete.
	ReasonRequested = "requested"
	// ReasonSpotReclaimed is the cloud taking back an interrupted spot instance.
	ReasonSpotReclaimed = "spot-reclaimed"
	// ReasonCapacityLost is the cloud ending an instance for want of capacity, with no notice
	// (LoseCapacity). It is also the EndCode Get reports for the instance afterwards.
	ReasonCapacityLost = "capacity-lost"
)

// Event is one line of the event log.
type Event struct {
	// Seq numbers the events of a state file from 1, in the log's order (0 in logs written
	// before it was kept).
	Seq        int64        `json:"seq,omitempty"`
	Time       time.Time    `json:"time"`
	Kind       EventKind    `json:"event"`
	Cluster    string       `json:"cluster"`
	InstanceID string       `json:"instanceID"`
	LaunchID   string       `json:"launchID"`
	NodeName   string       `json:"nodeName"`
	Offering   api.Offering `json:"offering"`
	Reason     string       `json:"reason,omitempty"`
}

// newEvent returns an event about the instance.
func newEvent(kind EventKind, r *record, at time.Time, reason string) Event {
	return Event{
		Time: at, Kind: kind, Cluster: r.Cluster, InstanceID: r.ID, LaunchID: r.LaunchID,
		NodeName: r.NodeName, Offering: r.Offering, Reason: reason,
	}
}

// appendEvents writes the events as JSON lines at the end of the log, creating it when missing.
func appendEvents(path string, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	var buf []byte
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("encoding %s event: %w", e.Kind, err)
		}
		buf = append(append(buf, b...), '\n')
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("opening event log: %w", err)
	}
	if _, err := f.Write(buf); err != nil {
		_ = f.Close()
		return fmt.Errorf("appending to event log %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing event log %s: %w", path, err)
	}
	return nil
}

// lastSeq returns the sequence number of the log's last event, 0 when the log is missing or
// empty. It reads only the log's end: appendEvents writes whole lines in one write.
func lastSeq(path string) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("opening event log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("reading event log %s: %w", path, err)
	}
	const tailSize = 64 << 10
	off := max(fi.Size()-tailSize, 0)
	buf := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("reading event log %s: %w", path, err)
	}
	lines := bytes.Split(bytes.TrimRight(buf, "\n"), []byte("\n"))
	last := lines[len(lines)-1]
	if len(last) == 0 {
		return 0, nil
	}
	var e Event
	if err := json.Unmarshal(last, &e); err != nil {
		return 0, fmt.Errorf("event log %s: its last line: %w", path, err)
	}
	return e.Seq, nil
}

// ReadEvents returns every event of the log at path, oldest first. A missing log has no events.
// A line that does not decode is an error naming its line number.
func ReadEvents(path string) ([]Event, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opening event log: %w", err)
	}
	defer f.Close()
	var events []Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("event log %s line %d: %w", path, line, err)
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading event log %s: %w", path, err)
	}
	return events, nil
}

// CountEvents returns how many of the events are of the given kind; with EventLaunched it counts
// purchases.
func CountEvents(events []Event, kind EventKind) int {
	n := 0
	for _, e := range events {
		if e.Kind == kind {
			n++
		}
	}
	return n
}
