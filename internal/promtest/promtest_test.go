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
	taken, picks := takeFirstPick(t, http.NotFoundHandler())
	s := StartScraping(t, "none", []string{"127.0.0.1:1"}, time.Second)
	if s.URL == "http://"+taken {
		t.Fatalf("launch returned the taken address %s", s.URL)
	}
	if *picks != 2 {
		t.Errorf("prometheus was started %d times, want 2 (the taken address, then another)", *picks)
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
	other := http.NewServeMux()
	other.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "Prometheus Server is Ready.") })
	other.HandleFunc("/api/v1/status/flags", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"status":"success","data":{"storage.tsdb.path":"/elsewhere/data"}}`)
	})
	taken, picks := takeFirstPick(t, other)
	s := StartScraping(t, "none", []string{"127.0.0.1:1"}, time.Second)
	if s.URL == "http://"+taken {
		t.Fatalf("launch returned %s, where another server answers", s.URL)
	}
	if *picks != 2 {
		t.Errorf("prometheus was started %d times, want 2 (the taken address, then another)", *picks)
	}
}

// takeFirstPick serves h on a loopback address and makes pickAddr hand that address out first
// and free ones after, until the test ends; it returns the address and the count of picks.
func takeFirstPick(t *testing.T, h http.Handler) (string, *int) {
	t.Helper()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = http.Serve(taken, h) }()
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
	return taken.Addr().String(), &picks
}
