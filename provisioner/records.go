package provisioner

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// RecordsConfigMap is the ConfigMap (in Config.Namespace) that holds the launch records.
const RecordsConfigMap = "tiler-launches"

// LaunchRecord is the durable record of one planned node, written before the cloud is called.
// Its offering (InstanceType, Zone, CapacityType), PricePerHour, Labels and GPUs are the plan's
// until the cloud launched the node, and then those of what the cloud launched, which may be one
// of the Fallbacks: in-flight accounting and housekeeping count what was really bought.
type LaunchRecord struct {
	// LaunchID is the planned node name, the name the launch asks the cloud for; launches are
	// idempotent on it.
	LaunchID string `json:"launchID"`
	// NodeName is the name of the node's Node: the planned name until the Node registers under
	// another (an EKS node registers as its EC2 private DNS name), then that one (see nodeIndex).
	NodeName string `json:"nodeName"`
	Pool     string `json:"pool"`
	// PricedOffering is what the node is bought as: the plan's offering until the cloud
	// launched it, then what the cloud launched.
	api.PricedOffering
	GPUs   int               `json:"gpus,omitempty"`
	Pods   []string          `json:"pods,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	Taints []corev1.Taint    `json:"taints,omitempty"`
	// GPU is the plan's GPU configuration of the node (nil without GPUs): what its bootstrap
	// applies and what the simulation counts while it is in flight.
	GPU *api.GPUConfig `json:"gpu,omitempty"`
	// Fallbacks are the plan's fallback offerings, tried in order when the cloud refuses the
	// node's own.
	Fallbacks []api.PricedOffering `json:"fallbacks,omitempty"`
	CreatedAt time.Time            `json:"createdAt"`
	// PoolHash is policy.PoolHash of the node's pool when the launch was planned; the controller
	// sets it on the Node as tiler.dev/pool-hash once it is Ready, so that a later change of the
	// pool's labels, taints or GPU settings is seen as drift.
	PoolHash string `json:"poolHash,omitempty"`
	// InstanceID is set once the cloud accepted the launch.
	InstanceID string `json:"instanceID,omitempty"`
	// LaunchAttempts counts the launch calls the cloud API failed without refusing the launch
	// (throttled, 5xx, unreachable). The cloud may have launched the node, so the record stays,
	// its pods count it in flight, and the launch is retried with the same launch ID at RetryAt.
	LaunchAttempts int `json:"launchAttempts,omitempty"`
	// LastError is the last of those failures.
	LastError string `json:"lastError,omitempty"`
	// RetryAt is when the next attempt is due.
	RetryAt time.Time `json:"retryAt,omitzero"`
	// DisruptionAction is the ID of the disruption action this node replaces nodes for (empty for
	// a purchase). A replacement is launched without a node reservation: the pods it takes are
	// recreated under new names once the old nodes are drained.
	DisruptionAction string `json:"disruptionAction,omitempty"`
}

// UnmarshalJSON reads a record, including one written before the GPU configuration was kept
// once: those held it twice, as "plan" (the simulator's, complete) and as "gpu" (the cloud's,
// in another encoding), and "gpu" with zero values on nodes without GPUs.
func (r *LaunchRecord) UnmarshalJSON(b []byte) error {
	type plain LaunchRecord
	var v struct {
		plain
		LegacyPlan *api.GPUConfig `json:"plan"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = LaunchRecord(v.plain)
	if v.LegacyPlan != nil {
		r.GPU = v.LegacyPlan
	}
	if r.GPU != nil && r.GPU.Equal(api.GPUConfig{}) {
		r.GPU = nil
	}
	return nil
}

// recordStore keeps launch records in a ConfigMap, one data key per launch ID.
type recordStore struct {
	kube      kubernetes.Interface
	namespace string
}

func (s *recordStore) get(ctx context.Context) (*corev1.ConfigMap, error) {
	cm, err := s.kube.CoreV1().ConfigMaps(s.namespace).Get(ctx, RecordsConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: RecordsConfigMap, Namespace: s.namespace}}
		cm, err = s.kube.CoreV1().ConfigMaps(s.namespace).Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return s.kube.CoreV1().ConfigMaps(s.namespace).Get(ctx, RecordsConfigMap, metav1.GetOptions{})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reading launch records: %w", err)
	}
	return cm, nil
}

// List returns the records sorted by launch ID.
func (s *recordStore) List(ctx context.Context) ([]LaunchRecord, error) {
	cm, err := s.get(ctx)
	if err != nil {
		return nil, err
	}
	var out []LaunchRecord
	for k, v := range cm.Data {
		var r LaunchRecord
		if err := json.Unmarshal([]byte(v), &r); err != nil {
			return nil, fmt.Errorf("launch record %s: %w", k, err)
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LaunchID < out[j].LaunchID })
	return out, nil
}

// Put writes records (insert or replace) in one update.
func (s *recordStore) Put(ctx context.Context, recs ...LaunchRecord) error {
	return s.update(ctx, func(data map[string]string) error {
		for _, r := range recs {
			b, err := json.Marshal(r)
			if err != nil {
				return err
			}
			data[r.LaunchID] = string(b)
		}
		return nil
	})
}

// SetNodeNames sets the NodeName of the records named by launch ID (launch ID → node name) in one
// update, keeping the rest of each record as stored; a record that is gone stays gone.
func (s *recordStore) SetNodeNames(ctx context.Context, names map[string]string) error {
	if len(names) == 0 {
		return nil
	}
	return s.update(ctx, func(data map[string]string) error {
		for id, name := range names {
			v, ok := data[id]
			if !ok {
				continue
			}
			var r LaunchRecord
			if err := json.Unmarshal([]byte(v), &r); err != nil {
				return fmt.Errorf("launch record %s: %w", id, err)
			}
			r.NodeName = name
			b, err := json.Marshal(r)
			if err != nil {
				return err
			}
			data[id] = string(b)
		}
		return nil
	})
}

// Delete removes records.
func (s *recordStore) Delete(ctx context.Context, launchIDs ...string) error {
	return s.update(ctx, func(data map[string]string) error {
		for _, id := range launchIDs {
			delete(data, id)
		}
		return nil
	})
}

func (s *recordStore) update(ctx context.Context, mutate func(map[string]string) error) error {
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cm, err := s.get(ctx)
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		if err := mutate(cm.Data); err != nil {
			return err
		}
		_, err = s.kube.CoreV1().ConfigMaps(s.namespace).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("writing launch records: %w", err)
	}
	return nil
}
