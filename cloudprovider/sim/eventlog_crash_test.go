package sim

import (
	"path/filepath"
	"testing"
	"time"
)

// TestEventsSurviveAKillBetweenSaveAndAppend: a process killed after saving the state and before
// appending its events (the state file holds them as Unlogged, the log does not) loses no event:
// the next update appends them first, once, in order; events already in the log are not
// appended again.
func TestEventsSurviveAKillBetweenSaveAndAppend(t *testing.T) {
	dir := t.TempDir()
	s := &store{path: filepath.Join(dir, "cloud.json"), eventLogPath: filepath.Join(dir, "cloud.json"+EventLogSuffix)}
	at := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	launch := func(id string) func(*state) error {
		return func(st *state) error {
			r := &record{ID: id, Cluster: "c", LaunchID: "l-" + id, State: StatePending}
			st.Instances = append(st.Instances, r)
			st.emit(newEvent(EventLaunched, r, at, ""))
			return nil
		}
	}
	if err := s.update(launch("a")); err != nil {
		t.Fatal(err)
	}
	// The kill: the state of the second launch is saved, its event never appended.
	st, err := s.load()
	if err != nil {
		t.Fatal(err)
	}
	st.Unlogged = nil
	if err := launch("b")(st); err != nil {
		t.Fatal(err)
	}
	st.Unlogged = st.events
	if err := s.save(st); err != nil {
		t.Fatal(err)
	}
	if events, err := ReadEvents(s.eventLogPath); err != nil || len(events) != 1 {
		t.Fatalf("before the next update: %d events (%v), want 1", len(events), err)
	}
	// The next process's update (a view too) appends it; later ones do not repeat it.
	if err := s.view(func(*state) {}); err != nil {
		t.Fatal(err)
	}
	if err := s.update(launch("c")); err != nil {
		t.Fatal(err)
	}
	if err := s.update(func(*state) error { return nil }); err != nil {
		t.Fatal(err)
	}
	events, err := ReadEvents(s.eventLogPath)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, e := range events {
		got = append(got, e.InstanceID)
		if e.Seq != int64(i+1) {
			t.Errorf("event %d (%s) has seq %d, want %d", i, e.InstanceID, e.Seq, i+1)
		}
	}
	if len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Errorf("events of instances %v, want [a b c]", got)
	}
	if n := CountEvents(events, EventLaunched); n != 3 {
		t.Errorf("%d purchases logged, want 3", n)
	}
}
