package prescale_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tiler-dev/tiler/provisioner/prescale"
	"github.com/tiler-dev/tiler/provisioner/prescale/prescaletest"
)

// TestPrescalerLeadFollowsObservedBootTime: a forecast without leadTime is sized the pool's
// observed boot time plus forecast.LeadBuffer ahead; before any boot is seen, the configured
// boot time.
func TestPrescalerLeadFollowsObservedBootTime(t *testing.T) {
	noLead := strings.Replace(prescaletest.ChatPolicy, "  leadTime: 2h\n", "", 1)
	for _, c := range []struct {
		name     string
		observed map[string]time.Duration
		want     time.Duration
	}{
		{"no boot seen: configured 5m + 10m", nil, 15 * time.Minute},
		{"inference pool boots in 7m: 17m", map[string]time.Duration{"inference": 7 * time.Minute}, 17 * time.Minute},
		{"another pool's boot does not count", map[string]time.Duration{"batch": 2 * time.Minute}, 15 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newPrescaleEnv(t, prescaletest.At(5, 0), prescale.Config{},
				prescaletest.PolicyConfigMap("cost-policy", noLead), prescaletest.Deployment("llm", "chat", 1))
			e.prom.Series[prescaletest.ChatQuery] = prescaletest.Diurnal
			e.p.SetBootTimes(func(pool string) (time.Duration, bool) {
				d, ok := c.observed[pool]
				return d, ok
			})
			if _, err := e.p.ExpectedPods(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			d := e.p.Decisions()
			if len(d) != 1 || d[0].Err != nil {
				t.Fatalf("decisions = %+v", d)
			}
			if d[0].Lead != c.want {
				t.Errorf("lead %s, want %s", d[0].Lead, c.want)
			}
		})
	}
}
