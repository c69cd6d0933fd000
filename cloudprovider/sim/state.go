package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/cloudprovider"
)

// stateVersion is the format version of the state file; a file of another version is refused
// rather than misread.
const stateVersion = 1

// Instance states, as cloudprovider.Instance.State normalises them. Terminated instances are
// removed from the state file, so they are never listed (Get answers for those LoseCapacity ended,
// as terminated).
const (
	// StatePending is an instance whose Node is not Ready yet.
	StatePending = cloudprovider.StatePending
	// StateRunning is an instance whose Node has turned Ready.
	StateRunning = cloudprovider.StateRunning
	// StateTerminating is an instance being deleted.
	StateTerminating = cloudprovider.StateTerminating
	// StateTerminated is an instance LoseCapacity ended (state.Ended).
	StateTerminated = cloudprovider.StateTerminated
)

// record is one instance in the state file: what Create was asked for, plus the schedule fixed
// at launch, so that a restarted Provider runs the instance exactly as the first one would have.
type record struct {
	ID           string       `json:"id"`
	Cluster      string       `json:"cluster"`
	LaunchID     string       `json:"launchID"`
	NodeName     string       `json:"nodeName"`
	Pool         string       `json:"pool,omitempty"`
	Offering     api.Offering `json:"offering"`
	State        string       `json:"state"`
	PricePerHour float64      `json:"pricePerHour"`
	LaunchedAt   time.Time    `json:"launchedAt"`
	// ReadyAt is when the Node registers Ready; DevicesAt when its GPUs are published.
	ReadyAt        time.Time         `json:"readyAt"`
	DevicesAt      time.Time         `json:"devicesAt"`
	NeverRegisters bool              `json:"neverRegisters,omitempty"`
	InterruptedAt  *time.Time        `json:"interruptedAt,omitempty"`
	Tags           map[string]string `json:"tags,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	Taints         []corev1.Taint    `json:"taints,omitempty"`
	GPU            api.GPUConfig     `json:"gpu"`
	// MIGChange is the MIG re-configuration under way or refused (migmanager.go); GPU holds the
	// applied layout and configuration.
	MIGChange *migChange `json:"migChange,omitempty"`
	// MIGDevicesAt is when the devices of the last applied MIG change are advertised
	// (Config.MIGAdvertiseDelay after it).
	MIGDevicesAt time.Time `json:"migDevicesAt,omitzero"`
	// GPUFault is the fault injected into the node's GPUs (InjectGPUFault); "" when healthy.
	GPUFault GPUFault `json:"gpuFault,omitempty"`
	// EndCode is why the cloud ended the instance, on the ended instances Get still answers for.
	EndCode string `json:"endCode,omitempty"`
	// Image is the image the instance booted from (Config.Image or SetImage at its launch).
	Image string `json:"image,omitempty"`
	// Settings are the launch settings of its launch (Config.LaunchSettings or SetLaunchSettings).
	Settings string `json:"settings,omitempty"`
	// CapacityReservation is the reservation the launch asked for: the simulated cloud's
	// reservations take every launch.
	CapacityReservation string `json:"capacityReservation,omitempty"`
}

// instance returns the record as the cloudprovider API shows it, sharing nothing with r.
func (r *record) instance() *cloudprovider.Instance {
	tags := make(map[string]string, len(r.Tags))
	for k, v := range r.Tags {
		tags[k] = v
	}
	return &cloudprovider.Instance{
		ID: r.ID, LaunchID: r.LaunchID, NodeName: r.NodeName, Pool: r.Pool, Offering: r.Offering,
		State: r.State, PricePerHour: r.PricePerHour, LaunchedAt: r.LaunchedAt, Tags: tags,
		EndCode: r.EndCode, CapacityLost: r.EndCode == ReasonCapacityLost, Image: r.Image, Settings: r.Settings,
		CapacityReservation: r.CapacityReservation,
	}
}

// notice is a pending interruption notice for a cluster, kept until Interruptions.Ack
// acknowledges it.
type notice struct {
	Cluster      string                     `json:"cluster"`
	Interruption cloudprovider.Interruption `json:"interruption"`
	// VisibleAt is when a polled notice not acknowledged yet is delivered again (unset: never
	// polled).
	VisibleAt *time.Time `json:"visibleAt,omitempty"`
}

// state is the whole state file.
type state struct {
	Version int `json:"version"`
	// NextID numbers instances across every cluster of the file: sim-000001, sim-000002, ...
	NextID    int       `json:"nextID"`
	Instances []*record `json:"instances"`
	// Ended are the instances the cloud ended for want of capacity (LoseCapacity), the last
	// maxEnded of them: Get answers for them as terminated, as EC2 answers for an ended instance
	// for about an hour after; List does not show them.
	Ended   []*record `json:"ended,omitempty"`
	Notices []notice  `json:"notices"`
	// NextNotice numbers the notices as first polled; the number is the notice's Receipt.
	NextNotice int `json:"nextNotice,omitempty"`
	// EventSeq is the sequence number of the last event emitted (saved with the state).
	EventSeq int64 `json:"eventSeq,omitempty"`
	// Unlogged are the events of the last saved update, kept in the file until the next update
	// has seen them in the event log: a process killed between saving the state and appending
	// its events leaves them here, and the next update appends them (see store.update).
	Unlogged []Event `json:"unlogged,omitempty"`
	// events are appended to the event log once the state carrying them is saved.
	events []Event
}

// emit queues an event for the log, numbered after the last one; it is written only if the
// update that emits it is saved.
func (s *state) emit(e Event) {
	s.EventSeq++
	e.Seq = s.EventSeq
	s.events = append(s.events, e)
}

// find returns the cluster's instance with the given ID, or nil.
func (s *state) find(cluster, id string) *record {
	for _, r := range s.Instances {
		if r.ID == id && r.Cluster == cluster {
			return r
		}
	}
	return nil
}

// remove drops the instance with the given ID.
func (s *state) remove(id string) {
	kept := s.Instances[:0]
	for _, r := range s.Instances {
		if r.ID != id {
			kept = append(kept, r)
		}
	}
	s.Instances = kept
}

// fileMu serialises state-file access within the process; lockFile does it across processes.
var fileMu sync.Mutex

// store reads and rewrites the state file and appends to the event log.
type store struct {
	path, eventLogPath string
}

// update loads the state, applies fn and, when fn succeeds, writes the state back atomically.
// The file stays locked throughout, so concurrent updates never lose each other's changes.
//
// Events are crash-safe: the state is saved with its new events (Unlogged) before they are
// appended to the log, and an update first appends whatever Unlogged events of the previous one
// the log does not have yet (its last sequence number says). A SIGKILL between the two writes
// therefore delays an event to the next update instead of losing it, and never logs an event of
// a change that was not saved.
func (s *store) update(fn func(*state) error) error {
	fileMu.Lock()
	defer fileMu.Unlock()
	unlock, err := lockFile(s.path + ".lock")
	if err != nil {
		return fmt.Errorf("locking state file: %w", err)
	}
	defer unlock()
	st, err := s.load()
	if err != nil {
		return err
	}
	if err := s.catchUp(st); err != nil {
		return err
	}
	if err := fn(st); err != nil {
		return err
	}
	st.Unlogged = st.events
	if err := s.save(st); err != nil {
		return err
	}
	// Still under the lock, so the log's order is the order of the saved changes.
	return appendEvents(s.eventLogPath, st.events)
}

// catchUp appends the saved state's Unlogged events that the log lacks (a process was killed
// after saving the state and before appending them) and forgets them.
func (s *store) catchUp(st *state) error {
	if len(st.Unlogged) == 0 {
		return nil
	}
	last, err := lastSeq(s.eventLogPath)
	if err != nil {
		return err
	}
	var missing []Event
	for _, e := range st.Unlogged {
		if e.Seq > last {
			missing = append(missing, e)
		}
	}
	st.Unlogged = nil
	return appendEvents(s.eventLogPath, missing)
}

// view loads the state and passes it to fn; changes fn makes are not saved.
func (s *store) view(fn func(*state)) error {
	err := s.update(func(st *state) error {
		fn(st)
		return errView
	})
	if errors.Is(err, errView) {
		return nil
	}
	return err
}

// errView stops update from saving after a view; view turns it back into success.
var errView = errors.New("view only")

// load reads the state file; a missing file is an empty inventory.
func (s *store) load() (*state, error) {
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return &state{Version: stateVersion, NextID: 1}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading state file: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var st state
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("decoding state file %s: %w", s.path, err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("state file %s: version %d, want %d", s.path, st.Version, stateVersion)
	}
	return &st, nil
}

// save writes the state to a temporary file in the same directory, syncs it and renames it over
// the state file, so that a crash leaves either the old or the new inventory, never half of one.
func (s *store) save(st *state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding state: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), "."+filepath.Base(s.path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing state file: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("writing state file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("syncing state file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("closing state file: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("replacing state file: %w", err)
	}
	return nil
}
