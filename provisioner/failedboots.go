package provisioner

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Failed boots: a pool whose last ProbeAfterFailedBoots launches did not register launches one
// node at a time (Memory.FailedBoots, probingPools). The controller keeps that memory in the
// ConfigMap FailedBootsConfigMap of its namespace, so that a restart or a new leader does not buy
// a node per pending pod again from a pool that does not boot: the first batch reads it back, and
// every batch that changes the memory writes it. A node of the pool that registers ends it (one
// that was Ready before the restart does not), and so does an operator deleting the entry or the
// ConfigMap.

// FailedBootsConfigMap is the ConfigMap, in Config.Namespace, that keeps the failed boots.
const FailedBootsConfigMap = "tiler-failed-boots"

// failedBootsKey is the ConfigMap's key: a JSON object of the launch IDs that did not register,
// by pool.
const failedBootsKey = "failures.json"

// bootMemory is what the ConfigMap held when last read or written (nil until the first batch
// has read it).
type bootMemory struct {
	stored map[string][]string
}

// loadFailedBoots reads the ConfigMap into the memory once, before the first batch decides; until
// it can be read, no batch writes it (that would lose what an earlier process stored).
func (c *Controller) loadFailedBoots(ctx context.Context) {
	if c.boots.stored != nil {
		return
	}
	cm, err := c.kube.CoreV1().ConfigMaps(c.cfg.Namespace).Get(ctx, FailedBootsConfigMap, metav1.GetOptions{})
	stored := map[string][]string{}
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		c.log.Warn("reading the failed boots; read again at the next batch", zap.String(keyConfigMap, FailedBootsConfigMap), zap.Error(err))
		return
	default:
		if v, ok := cm.Data[failedBootsKey]; ok {
			if err := json.Unmarshal([]byte(v), &stored); err != nil {
				c.log.Error("ConfigMap "+c.cfg.Namespace+"/"+FailedBootsConfigMap+": key "+failedBootsKey+
					" is not a JSON object of launch IDs by pool; read as empty, and replaced at the next change", zap.Error(err))
				stored = map[string][]string{}
			}
		}
	}
	for pool, ids := range stored {
		for _, id := range ids {
			if c.memory.FailedBoots[pool] == nil {
				c.memory.FailedBoots[pool] = map[string]bool{}
			}
			c.memory.FailedBoots[pool][id] = true
		}
	}
	c.boots.stored = stored
}

// saveFailedBoots writes the memory's failed boots to the ConfigMap when they differ from what it
// holds. A failed write is retried at the next batch.
func (c *Controller) saveFailedBoots(ctx context.Context) {
	if c.boots.stored == nil {
		return
	}
	now := map[string][]string{}
	for pool, ids := range c.memory.FailedBoots {
		if len(ids) > 0 {
			now[pool] = slices.Sorted(maps.Keys(ids))
		}
	}
	if maps.EqualFunc(now, c.boots.stored, slices.Equal) {
		return
	}
	if err := c.writeFailedBoots(ctx, now); err != nil {
		c.log.Warn("writing the failed boots; retried at the next batch", zap.String(keyConfigMap, FailedBootsConfigMap), zap.Error(err))
		return
	}
	c.boots.stored = now
}

func (c *Controller) writeFailedBoots(ctx context.Context, byPool map[string][]string) error {
	b, err := json.Marshal(byPool)
	if err != nil {
		return err
	}
	cm, err := c.kube.CoreV1().ConfigMaps(c.cfg.Namespace).Get(ctx, FailedBootsConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		cm = nil
	case err != nil:
		return fmt.Errorf("reading ConfigMap %s/%s: %w", c.cfg.Namespace, FailedBootsConfigMap, err)
	}
	return c.putConfigMap(ctx, cm, FailedBootsConfigMap, failedBootsKey, string(b))
}
