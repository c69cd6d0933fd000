package provisioner

import (
	"context"
	"slices"
	"sort"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/api/policy"
)

// refreshPolicy reads the cost-policy ConfigMaps (label tiler.dev/cost-policy=true in the
// controller's namespace). Their pools are merged in ConfigMap name order. An invalid ConfigMap
// gets a Warning Event naming the field and a log line, and the last valid policy stays in force;
// each resourceVersion is judged once.
func (c *Controller) refreshPolicy(ctx context.Context) {
	cms, err := c.policyInf.Core().V1().ConfigMaps().Lister().List(everything())
	if err != nil {
		c.log.Error("listing cost-policy ConfigMaps", zap.Error(err))
		return
	}
	merged, invalid, err := mergePolicies(cms)
	for _, bad := range invalid {
		c.reportInvalid(bad.cm, bad.err)
	}
	valid := len(invalid) == 0
	if err != nil {
		c.log.Error("merged cost policy is invalid; keeping the last valid one", zap.Error(err))
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case merged != nil && valid:
		c.policy = merged
	case merged != nil && c.policy == nil:
		c.policy = merged // some ConfigMaps are valid and none was before: use them
	case len(cms) == 0:
		c.policy = nil
	}
}

// invalidPolicy is a cost-policy ConfigMap that does not parse or validate, and why.
type invalidPolicy struct {
	cm  *corev1.ConfigMap
	err error
}

// mergePolicies merges the cost-policy ConfigMaps' policies in name order: the pools of all, the
// budget of the last that has one. It returns nil for none, the ConfigMaps left out as invalid,
// and an error when the merged policy does not validate.
func mergePolicies(cms []*corev1.ConfigMap) (*policy.CostPolicy, []invalidPolicy, error) {
	cms = slices.Clone(cms)
	sort.Slice(cms, func(i, j int) bool { return cms[i].Name < cms[j].Name })
	var merged *policy.CostPolicy
	var invalid []invalidPolicy
	for _, cm := range cms {
		p, err := policy.FromConfigMap(cm)
		if err != nil {
			invalid = append(invalid, invalidPolicy{cm, err})
			continue
		}
		if merged == nil {
			merged = p
		} else {
			merged.Pools = append(merged.Pools, p.Pools...)
			if p.Budget != nil {
				merged.Budget = p.Budget
			}
		}
	}
	if merged != nil {
		if err := merged.Validate(); err != nil {
			return nil, invalid, err
		}
	}
	return merged, invalid, nil
}

func (c *Controller) reportInvalid(cm *corev1.ConfigMap, err error) {
	c.mu.Lock()
	judged := c.policyRV[cm.Namespace+"/"+cm.Name] == cm.ResourceVersion
	c.policyRV[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	c.mu.Unlock()
	if judged {
		return
	}
	c.log.Error("invalid cost policy; keeping the last valid one", zap.String(keyConfigMap, cm.Namespace+"/"+cm.Name), zap.Error(err))
	c.recorder.Eventf(cm, corev1.EventTypeWarning, "InvalidCostPolicy", "%s: %v (the last valid policy stays in force)", policy.ConfigMapKey, err)
}

// currentPolicy returns the policy in force (nil: the default).
func (c *Controller) currentPolicy() *policy.CostPolicy {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.policy
}
