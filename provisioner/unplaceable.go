package provisioner

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tiler-dev/tiler/api"
)

// ReasonNotTriggerScaleUp is the Event reason on a pending pod the plan has no place for (the
// Cluster Autoscaler's name for the same news); the message carries the plan's reason code and
// why, in the words tiler plan prints.
const ReasonNotTriggerScaleUp = "NotTriggerScaleUp"

// unplaceableLimiter keeps the NotTriggerScaleUp Events to one per pod per interval: every batch
// re-plans the pod, and an Event per batch would bury the pod's other Events. A changed reason
// code is told at once.
type unplaceableLimiter struct {
	interval time.Duration
	mu       sync.Mutex
	told     map[types.UID]toldUnplaceable
}

type toldUnplaceable struct {
	at   time.Time
	code api.ReasonCode
}

func newUnplaceableLimiter(interval time.Duration) *unplaceableLimiter {
	return &unplaceableLimiter{interval: interval, told: map[types.UID]toldUnplaceable{}}
}

// due reports whether the pod is to be told about code at now, and if so notes it. Entries older
// than the interval are dropped, so the map holds only pods told recently.
func (l *unplaceableLimiter) due(uid types.UID, code api.ReasonCode, now time.Time) bool {
	if l.interval <= 0 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, t := range l.told {
		if now.Sub(t.at) >= l.interval {
			delete(l.told, k)
		}
	}
	if t, ok := l.told[uid]; ok && t.code == code {
		return false
	}
	l.told[uid] = toldUnplaceable{at: now, code: code}
	return true
}

// reportUnplaceable records a Warning NotTriggerScaleUp Event on each pending pod of the plan
// that has no place, at most once per UnplaceableEventInterval per pod. Expected pods (forecasts)
// are not in pods and get none.
func (c *Controller) reportUnplaceable(unplaceable []api.UnschedulablePod, pods map[string]*corev1.Pod, now time.Time) {
	for _, u := range unplaceable {
		p := pods[u.Pod]
		if p == nil || !c.unplaceable.due(p.UID, u.Code, now) {
			continue
		}
		c.recorder.Eventf(p, corev1.EventTypeWarning, ReasonNotTriggerScaleUp, "no place in Tiler's plan (%s): %s", u.Code, u.Reason)
	}
}
