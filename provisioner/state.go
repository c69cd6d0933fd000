package provisioner

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tiler-dev/tiler/api"
	"k8s.io/client-go/informers"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/cloudprovider"
)

// State is what one batch decides on: the cluster as the informers have it, the launch records,
// the policy and catalog in force, the offerings marked unavailable and the pods forecasts expect.
// The controller reads it (observe); Decide reads nothing else, so a replay can build it from an
// in-memory cluster at a virtual time.
type State struct {
	// Now is when the batch started: the time every decision of the batch is made at.
	Now time.Time
	// Pods are the cluster's pods, placeholder pods excepted.
	Pods []*corev1.Pod
	// Placeholders are the placeholder pods that exist (api.LabelPlaceholder).
	Placeholders []*corev1.Pod
	// Nodes are the cluster's Nodes.
	Nodes []*corev1.Node
	// DaemonSets, PriorityClasses and the DRA objects are copied into the simulation's snapshot.
	DaemonSets             []*appsv1.DaemonSet
	PriorityClasses        []*schedulingv1.PriorityClass
	DeviceClasses          []*resourcev1.DeviceClass
	ResourceClaims         []*resourcev1.ResourceClaim
	ResourceClaimTemplates []*resourcev1.ResourceClaimTemplate
	ResourceSlices         []*resourcev1.ResourceSlice
	// PodDisruptionBudgets are copied into the snapshot; the disruption plan honours them.
	PodDisruptionBudgets []*policyv1.PodDisruptionBudget
	// PodGroups are the native gangs (scheduling.k8s.io/v1beta1), copied into the snapshot; none
	// when the API server does not serve them.
	PodGroups []*schedulingv1beta1.PodGroup
	// Namespaces (their labels: cost-policy teams' namespaceSelectors) and ResourceQuotas (the
	// bounds on what a plan buys for a namespace) are copied into the snapshot.
	Namespaces     []*corev1.Namespace
	ResourceQuotas []*corev1.ResourceQuota
	// Records are the launch records as stored, sorted by launch ID.
	Records []LaunchRecord
	// Policy is the cost policy in force; nil means the default.
	Policy *policy.CostPolicy
	// Catalog is the batch's catalog, before the unavailable offerings are marked in it.
	Catalog *catalog.Catalog
	// Unavailable are the offerings the cloud would not sell now, why, and until when.
	Unavailable []cloudprovider.UnavailableEntry
	// Expected are the pods forecasts expect this batch (Prescaler.ExpectedPods); ExpectedErr is
	// why there are none when the pre-scaler failed: pre-scaling is skipped for the batch and the
	// placeholder pods are left as they are.
	Expected    []*corev1.Pod
	ExpectedErr error
	// LastExpected are the expected pods of the batch before (ExpectedPodsHolder): housekeeping
	// keeps the nodes a plan of them needs.
	LastExpected []*corev1.Pod
	// PlaceholderClass and WantedPlaceholders are what the PlaceholderSource wants: the
	// PriorityClass placeholders use and the placeholder pods, by name.
	PlaceholderClass   *schedulingv1.PriorityClass
	WantedPlaceholders []*corev1.Pod
	// ProvisioningRequests are the cluster's ProvisioningRequests (ProvisioningRequestSource),
	// ProvisioningRequestsErr why there are none this batch (they are then left as they are), and
	// ProvisioningRequestClass the PriorityClass of their placeholder pods.
	ProvisioningRequests     []ProvisioningRequest
	ProvisioningRequestsErr  error
	ProvisioningRequestClass *schedulingv1.PriorityClass
	// DisruptionEvicted is when a disruption last evicted a pod of each controller (by the
	// controller's UID): its pending pods are expected to land where the disruption plan moved
	// them, and do not trigger a purchase for Config.DisruptionRescheduleGrace.
	DisruptionEvicted map[string]time.Time
	// UsableSince is when the nomination watch first saw each launched node usable (the start of
	// its nominationGrace).
	UsableSince map[string]time.Time
	// Launching are the launch IDs whose launch call is under way (the controller's loop does not
	// wait for them: launches.go). Such a launch is in flight: it is not retried, nor removed for
	// its registration timeout, until its call has returned.
	Launching map[string]bool
	// Removing are the launch IDs being removed (instance, Node, record) by a call still under way:
	// the batch counts them as gone and decides nothing about them.
	Removing map[string]bool
}

// observe reads the State of a batch: the policy (reporting invalid cost-policy ConfigMaps), the
// informers' objects, the launch records, the batch's catalog and the unavailable offerings, and
// the pre-scaler's expected pods — the last batch's first, then this batch's.
func (c *Controller) observe(ctx context.Context) (State, error) {
	s, err := c.observeCluster(ctx, c.clock.Now())
	if err != nil {
		return s, err
	}
	if holder, ok := c.prescaler.(ExpectedPodsHolder); ok {
		s.LastExpected = holder.LastExpectedPods()
	}
	if c.prescaler != nil {
		s.Expected, s.ExpectedErr = c.prescaler.ExpectedPods(ctx, s.Pods)
		if src, ok := c.prescaler.(PlaceholderSource); ok && s.ExpectedErr == nil {
			s.PlaceholderClass, s.WantedPlaceholders = src.Placeholders()
		}
	}
	if c.provreqs != nil {
		s.ProvisioningRequests, s.ProvisioningRequestClass, s.ProvisioningRequestsErr = c.provreqs.ProvisioningRequests(ctx)
	}
	if c.nominations != nil {
		s.UsableSince = c.nominations.usableSince()
	}
	s.DisruptionEvicted = c.disruption.evictedOwners()
	return s, nil
}

// observeCluster reads what the batch and the disruption loop share: the policy, the
// informers' objects, the launch records, the catalog and the unavailable offerings, at now.
func (c *Controller) observeCluster(ctx context.Context, now time.Time) (State, error) {
	// The launches under way before the records: a launch that ends in between has written its
	// record (launchTracker.end follows the write), so the batch never sees it both not under way
	// and not yet updated.
	s := State{Now: now, Launching: c.launches.active(callLaunch), Removing: c.launches.active(callRemove)}
	c.refreshPolicy(ctx)
	s.Policy = c.withCloudReservations(ctx, now, c.currentPolicy())
	if err := listCluster(c.factory, c.podGroups != nil, &s); err != nil {
		return s, err
	}
	var err error
	if s.Records, err = c.records.List(ctx); err != nil {
		return s, err
	}
	s.Catalog = c.currentCatalog()
	s.Unavailable = c.unavailable.List()
	return s, nil
}

// snapshot is the simulation's input over the State: every node, every bound pod that holds its
// node's resources, and, of the pending pods, only pending (those that may trigger a purchase
// now, and expected pods); the others are still the scheduler's to try. A node a disruption
// action is removing (api.AnnotationDisruptionAction) is unschedulable in the snapshot, cordoned
// or not yet: no plan puts a pod there.
func (s *State) snapshot(pending []*corev1.Pod) *snapshot.Snapshot {
	nodes, cloned := s.Nodes, false
	for i, n := range s.Nodes {
		if n.Annotations[api.AnnotationDisruptionAction] == "" || n.Spec.Unschedulable {
			continue
		}
		if !cloned {
			nodes, cloned = slices.Clone(s.Nodes), true
		}
		cp := n.DeepCopy()
		cp.Spec.Unschedulable = true
		nodes[i] = cp
	}
	snap := &snapshot.Snapshot{Now: s.Now, Nodes: nodes, DaemonSets: s.DaemonSets, PriorityClasses: s.PriorityClasses,
		DeviceClasses: s.DeviceClasses, ResourceClaims: s.ResourceClaims, ResourceClaimTemplates: s.ResourceClaimTemplates,
		ResourceSlices: s.ResourceSlices, PodDisruptionBudgets: s.PodDisruptionBudgets, PodGroups: s.PodGroups,
		Namespaces: s.Namespaces, ResourceQuotas: s.ResourceQuotas}
	for _, p := range s.Pods {
		if snapshot.IsActive(p) {
			snap.Pods = append(snap.Pods, p)
		}
	}
	snap.Pods = append(snap.Pods, pending...)
	return snap
}

// listCluster reads into s what the informers of f hold (registerSnapshotInformers, and the
// PodGroups when podGroups): the pods (placeholders apart), nodes, DaemonSets, PriorityClasses,
// DRA objects, PodDisruptionBudgets, Namespaces and ResourceQuotas. The controller's batches and
// ObserveCluster read the cluster with it.
func listCluster(f informers.SharedInformerFactory, podGroups bool, s *State) error {
	all, err := f.Core().V1().Pods().Lister().List(everything())
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	// Placeholder pods stand for expected pods the pre-scaler returns anyway: no batch plans them.
	s.Pods, s.Placeholders = splitPlaceholders(all)
	if s.Nodes, err = f.Core().V1().Nodes().Lister().List(everything()); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	if s.DaemonSets, err = f.Apps().V1().DaemonSets().Lister().List(everything()); err != nil {
		return fmt.Errorf("listing DaemonSets: %w", err)
	}
	if s.PriorityClasses, err = f.Scheduling().V1().PriorityClasses().Lister().List(everything()); err != nil {
		return fmt.Errorf("listing PriorityClasses: %w", err)
	}
	if s.DeviceClasses, err = f.Resource().V1().DeviceClasses().Lister().List(everything()); err != nil {
		return fmt.Errorf("listing DeviceClasses: %w", err)
	}
	if s.ResourceClaims, err = f.Resource().V1().ResourceClaims().Lister().List(everything()); err != nil {
		return fmt.Errorf("listing ResourceClaims: %w", err)
	}
	if s.ResourceClaimTemplates, err = f.Resource().V1().ResourceClaimTemplates().Lister().List(everything()); err != nil {
		return fmt.Errorf("listing ResourceClaimTemplates: %w", err)
	}
	if s.ResourceSlices, err = f.Resource().V1().ResourceSlices().Lister().List(everything()); err != nil {
		return fmt.Errorf("listing ResourceSlices: %w", err)
	}
	if s.PodDisruptionBudgets, err = f.Policy().V1().PodDisruptionBudgets().Lister().List(everything()); err != nil {
		return fmt.Errorf("listing PodDisruptionBudgets: %w", err)
	}
	if s.Namespaces, err = f.Core().V1().Namespaces().Lister().List(everything()); err != nil {
		return fmt.Errorf("listing Namespaces: %w", err)
	}
	if s.ResourceQuotas, err = f.Core().V1().ResourceQuotas().Lister().List(everything()); err != nil {
		return fmt.Errorf("listing ResourceQuotas: %w", err)
	}
	if podGroups {
		if s.PodGroups, err = f.Scheduling().V1beta1().PodGroups().Lister().List(everything()); err != nil {
			return fmt.Errorf("listing PodGroups: %w", err)
		}
	}
	return nil
}
