package promtest

import (
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestLaunchTakesAnotherAddressWhenItsIsTaken: the address picked for prometheus is taken
// before prometheus binds it — here by a server answering 404 to everything, as the
// controller's metrics server of the same test once did — so prometheus exits at once; launch
// starts it again on another address and returns that one, where /-/ready answers.
func TestLaunchTakesAnotherAddressWhenItsIsTaken(t *testing.T) {
	RequireBinaries(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = http.Serve(taken, http.NotFoundHandler()) }()
	t.Cleanup(func() { taken.Close() })

	picks := 0
	pickAddr = func(t *testing.T) string {
		picks++
		if picks == 1 {
			return taken.Addr().String()
		}
		return FreeAddr(t)
	}
	t.Cleanup(func() { pickAddr = FreeAddr })

	s := StartScraping(t, "none", []string{"127.0.0.1:1"}, time.Second)
	if s.URL == "http://"+taken.Addr().String() {
		t.Fatalf("launch returned the taken address %s", s.URL)
	}
	if picks != 2 {
		t.Errorf("prometheus was started %d times, want 2 (the taken address, then another)", picks)
	}
	resp, err := http.Get(s.URL + "/-/ready")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("%s/-/ready: %s, want 200", s.URL, resp.Status)
	}
}

// TestLaunchIsNotFooledByAnotherPrometheus: the address picked for prometheus is taken by a server
// that answers /-/ready with 200, as another test's prometheus would, but serves another TSDB.
// launch must not return that address: ours exits (address already in use) and is started again
// elsewhere.
func TestLaunchIsNotFooledByAnotherPrometheus(t *testing.T) {
	RequireBinaries(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	other := http.NewServeMux()
	other.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "Prometheus Server is Ready.") })
	other.HandleFunc("/api/v1/status/flags", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"status":"success","data":{"storage.tsdb.path":"/elsewhere/data"}}`)
	})
	go func() { _ = http.Serve(taken, other) }()
	t.Cleanup(func() { taken.Close() })

	picks := 0
	pickAddr = func(t *testing.T) string {
		picks++
		if picks == 1 {
			return taken.Addr().String()
		}
		return FreeAddr(t)
	}
	t.Cleanup(func() { pickAddr = FreeAddr })

	s := StartScraping(t, "none", []string{"127.0.0.1:1"}, time.Second)
	if s.URL == "http://"+taken.Addr().String() {
		t.Fatalf("launch returned %s, where another server answers", s.URL)
	}
	if picks != 2 {
		t.Errorf("prometheus was started %d times, want 2 (the taken address, then another)", picks)
	}
}
