package provisioner

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/simulator"
)

// ProvisioningRequests (autoscaling.x-k8s.io/v1, the Cluster Autoscaler's API; CRD in
// deploy/crds) ask for room for the pods of PodTemplates (spec.podSets: podTemplateRef, count).
// Tiler answers the two classes the Cluster Autoscaler implements, with its conditions and
// reasons:
//
//   - check-capacity.autoscaling.x-k8s.io: do the request's pods fit, all of them, on the
//     nodes that exist and those in flight, next to the capacity already booked? A simulation
//     that may buy nothing answers it each batch until it is found: Provisioned=True
//     (CapacityIsFound), and the room is booked; Provisioned=False (CapacityIsNotFound) and
//     asked again the next batch, or Failed=True (CapacityIsNotFound) with the parameter
//     noRetry: "true".
//   - best-effort-atomic-scale-up.autoscaling.x-k8s.io: Accepted=True on first sight; its pods
//     join the batch's simulation as one gang (tiler.dev/gang, all or nothing), bought for as the
//     pending pods are; once the plan places them all, Provisioned=True (CapacityIsProvisioned
//     when nodes were bought, written once the cloud took the launches; CapacityIsFound when
//     existing room held them) and the room is booked. A gang that a pool limit, the budget, a
//     team limit or a quota stops, or that fits no allowed offering, is Failed=True (the plan's
//     reason code and message); one the plan cannot place for now is Provisioned=False
//     (CapacityIsNotFound) and tried again the next batch.
//
// Booked room (either class) is held for the pods that consume the request — pods annotated
// autoscaling.x-k8s.io/consume-provisioning-request: <name> (or the deprecated
// cluster-autoscaler.kubernetes.io/ key) in the request's namespace — for Config.BookingTime
// from the Provisioned transition: each batch, a simulation that may buy nothing places the
// request's pods less one per consuming pod that exists; the nodes it uses are not empty for
// housekeeping nor candidates for consolidation, and the batch plans those pods first at the
// highest priority, so the room is not planned for other pending pods. In the cluster, the room
// is held by placeholder pods (the lowest priority, as for CapacityBuffers and forecasts), which
// the consuming pods preempt or replace. The booking ends with BookingExpired=True:
// CapacityReservationTimeExpired after BookingTime, CapacityBookingConsumed once all the
// request's pods are bound; CapacityRevoked=True when the booked room is gone (a node removed,
// other pods took it) — the booking is then dropped, not bought again. A request never
// provisioned is Failed=True (Expired) seven days after its creation, as with the Cluster
// Autoscaler. Requests of other classes are ignored (left to whichever controller owns them).
//
// Not supported: the Cluster Autoscaler's check-capacity batch processing and processor
// instances (the parameter processorInstance), parameters other than noRetry, ValidUntilSeconds
// of best-effort-atomic, deleting requests that stayed terminal for a week, and ignoring the
// consuming pods of a request that failed or whose booking ended (Tiler plans them as any pending
// pod).

// ProvisioningRequest classes Tiler answers.
const (
	ClassCheckCapacity    = "check-capacity.autoscaling.x-k8s.io"
	ClassBestEffortAtomic = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
)

// ProvisioningRequest condition types (autoscaling.x-k8s.io/v1).
const (
	ConditionAccepted        = "Accepted"
	ConditionProvisioned     = "Provisioned"
	ConditionFailed          = "Failed"
	ConditionBookingExpired  = "BookingExpired"
	ConditionCapacityRevoked = "CapacityRevoked"
)

// ProvisioningRequest condition reasons: the Cluster Autoscaler's, and CapacityRevoked.
const (
	ReasonAccepted                       = "Accepted"
	ReasonCapacityIsFound                = "CapacityIsFound"
	ReasonCapacityIsNotFound             = "CapacityIsNotFound"
	ReasonCapacityIsProvisioned          = "CapacityIsProvisioned"
	ReasonFailedToCreatePods             = "FailedToCreatePods"
	ReasonCapacityReservationTimeExpired = "CapacityReservationTimeExpired"
	ReasonCapacityBookingConsumed        = "CapacityBookingConsumed"
	ReasonExpired                        = "Expired"
	ReasonCapacityRevoked                = "CapacityRevoked"
)

// DefaultBookingTime is how long booked room is held (the Cluster Autoscaler's reservation time).
const DefaultBookingTime = 10 * time.Minute

// requestExpiration is how long a request may stay unprovisioned before it is Failed (Expired).
const requestExpiration = 7 * 24 * time.Hour

// NoRetryParameter is the check-capacity parameter that fails a request whose capacity is not
// found instead of asking again.
const NoRetryParameter = "noRetry"

// ProvisioningRequest is one request as a batch observes it.
type ProvisioningRequest struct {
	Namespace, Name string
	// Generation is metadata.generation (the conditions' observedGeneration).
	Generation int64
	// Class is spec.provisioningClassName.
	Class string
	// CreatedAt is metadata.creationTimestamp.
	CreatedAt time.Time
	// Conditions are status.conditions.
	Conditions []metav1.Condition
	// NoRetry is the parameter noRetry: "true".
	NoRetry bool
	// Pods are the request's pods, pod set after pod set, count of each: the PodTemplate's pod,
	// unbound, named after the request; they never reach the API server.
	Pods []*corev1.Pod
	// Placeholders[i], when set, holds the room of Pods[i] in the cluster while it is booked.
	Placeholders []*corev1.Pod
	// PodsErr is why Pods could not be built (a PodTemplate that does not exist), naming the field.
	PodsErr error
}

// Key is namespace/name.
func (r *ProvisioningRequest) Key() string { return r.Namespace + "/" + r.Name }

// ProvisioningRequestSource reads the ProvisioningRequests each batch decides on and writes the
// conditions it decided (prescale.ProvisioningRequests does, through the API server).
type ProvisioningRequestSource interface {
	// ProvisioningRequests returns every request, and the PriorityClass of their placeholders.
	ProvisioningRequests(ctx context.Context) ([]ProvisioningRequest, *schedulingv1.PriorityClass, error)
	// SetConditions writes a request's status.conditions.
	SetConditions(ctx context.Context, namespace, name string, conditions []metav1.Condition) error
}

// RequestUpdate is a request's new conditions, decided by a batch.
type RequestUpdate struct {
	Namespace, Name string
	Conditions      []metav1.Condition
	// AfterLaunch are the nodes of the batch's launches the update waits for: it is written only
	// when the cloud took every one of them (else the next batch decides again).
	AfterLaunch []string
}

// requestDecisions is what a batch decided about the requests before its plan.
type requestDecisions struct {
	// booked are the pods (namespace/name) of booked room, planned first.
	booked []*corev1.Pod
	// atomic are the gangs of best-effort-atomic requests not provisioned yet, by request key.
	atomic map[string][]*corev1.Pod
	// pending are the requests whose conditions wait for the plan (atomic), by key.
	pending map[string]*ProvisioningRequest
	// nodes are the nodes booked room is on.
	nodes map[string]bool
	// placeholders are the placeholder pods of the booked room.
	placeholders []*corev1.Pod
	updates      []RequestUpdate
}

// consumeAnnotations are the pod annotations naming the request a pod consumes.
var consumeAnnotations = []string{api.AnnotationConsumeProvisioningRequest, api.AnnotationConsumeProvisioningRequestDeprecated}

// consumers counts, per request key, the live pods that consume it, and those bound.
func consumers(pods []*corev1.Pod) (live, bound map[string]int) {
	live, bound = map[string]int{}, map[string]int{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, a := range consumeAnnotations {
			if name, ok := p.Annotations[a]; ok {
				key := p.Namespace + "/" + name
				live[key]++
				if p.Spec.NodeName != "" {
					bound[key]++
				}
				break
			}
		}
	}
	return live, bound
}

// noPurchase is the catalog with every offering unavailable: a plan over it may place pods on
// existing and in-flight nodes only.
func noPurchase(c *catalog.Catalog) *catalog.Catalog {
	out := c.Clone()
	for i := range out.Types {
		for j := range out.Types[i].Offerings {
			out.Types[i].Offerings[j].Unavailable = true
		}
	}
	return out
}

// requestPod is a copy of a request's pod for a simulation: in the gang of the request when
// gang, at priority prio when set.
func requestPod(p *corev1.Pod, r *ProvisioningRequest, gang int, prio *int32) *corev1.Pod {
	cp := p.DeepCopy()
	if gang > 0 {
		if cp.Labels == nil {
			cp.Labels = map[string]string{}
		}
		cp.Labels[api.LabelGang] = gangName(r)
		cp.Labels[api.LabelGangSize] = fmt.Sprint(gang)
	}
	if prio != nil {
		cp.Spec.Priority = prio
		cp.Spec.PriorityClassName = ""
	}
	return cp
}

// gangName is the gang of a request's pods in a simulation (a label value).
func gangName(r *ProvisioningRequest) string {
	n := "provreq." + r.Name
	if len(n) > 63 {
		n = n[:63]
	}
	return n
}

// Priorities of booked and checked pods in the simulations: above every real pod, booked first.
const (
	bookedPriority  = math.MaxInt32
	checkedPriority = math.MaxInt32 - 1
)

// condition returns the conditions with c set (apimeta.SetStatusCondition: the transition time
// moves only when the status changes) and whether they changed.
func setCondition(conds []metav1.Condition, c metav1.Condition) ([]metav1.Condition, bool) {
	out := slices.Clone(conds)
	changed := apimeta.SetStatusCondition(&out, c)
	return out, changed
}

// decideRequests decides, before the plan, what each ProvisioningRequest of a class Tiler
// answers becomes: bookings ended (time, consumed), kept or revoked; check-capacity requests
// answered; best-effort-atomic requests accepted and their gangs handed to the plan. recs are the
// launch records in force (in flight).
func decideRequests(s *State, cfg Config, recs []LaunchRecord, idx nodeIndex) *requestDecisions {
	out := &requestDecisions{atomic: map[string][]*corev1.Pod{}, pending: map[string]*ProvisioningRequest{}, nodes: map[string]bool{}}
	if len(s.ProvisioningRequests) == 0 || s.ProvisioningRequestsErr != nil || s.Catalog == nil {
		return out
	}
	live, bound := consumers(s.Pods)
	type booking struct {
		r    *ProvisioningRequest
		pods []*corev1.Pod
		ph   []*corev1.Pod
	}
	var booked, checks []booking
	now := metav1.NewTime(s.Now)
	cond := func(r *ProvisioningRequest, t string, st metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: st, Reason: reason, Message: msg, ObservedGeneration: r.Generation, LastTransitionTime: now}
	}
	update := func(r *ProvisioningRequest, cs ...metav1.Condition) {
		conds, changed := r.Conditions, false
		for _, c := range cs {
			var ch bool
			conds, ch = setCondition(conds, c)
			changed = changed || ch
		}
		if changed {
			out.updates = append(out.updates, RequestUpdate{Namespace: r.Namespace, Name: r.Name, Conditions: conds})
		}
	}
	accepted := func(r *ProvisioningRequest) metav1.Condition {
		return cond(r, ConditionAccepted, metav1.ConditionTrue, ReasonAccepted, "ProvisioningRequest is accepted by Tiler")
	}
	for i := range s.ProvisioningRequests {
		r := &s.ProvisioningRequests[i]
		if r.Class != ClassCheckCapacity && r.Class != ClassBestEffortAtomic {
			continue // another controller's
		}
		c := r.Conditions
		if apimeta.IsStatusConditionTrue(c, ConditionFailed) || apimeta.IsStatusConditionTrue(c, ConditionBookingExpired) ||
			apimeta.IsStatusConditionTrue(c, ConditionCapacityRevoked) {
			continue // done
		}
		if r.PodsErr != nil {
			update(r, cond(r, ConditionFailed, metav1.ConditionTrue, ReasonFailedToCreatePods, r.PodsErr.Error()))
			continue
		}
		key := r.Key()
		if p := apimeta.FindStatusCondition(c, ConditionProvisioned); p != nil && p.Status == metav1.ConditionTrue {
			switch {
			case bound[key] >= len(r.Pods):
				update(r, cond(r, ConditionBookingExpired, metav1.ConditionTrue, ReasonCapacityBookingConsumed,
					fmt.Sprintf("All %d pods of the request are bound: the booking is consumed", len(r.Pods))))
			case !s.Now.Before(p.LastTransitionTime.Add(cfg.BookingTime)):
				update(r, cond(r, ConditionBookingExpired, metav1.ConditionTrue, ReasonCapacityReservationTimeExpired, "Capacity reservation time is expired"))
			default:
				k := min(live[key], len(r.Pods))
				booked = append(booked, booking{r: r, pods: r.Pods[k:], ph: tail(r.Placeholders, k)})
			}
			continue
		}
		if !s.Now.Before(r.CreatedAt.Add(requestExpiration)) {
			update(r, cond(r, ConditionFailed, metav1.ConditionTrue, ReasonExpired, "ProvisioningRequest is expired"))
			continue
		}
		if r.Class == ClassCheckCapacity {
			checks = append(checks, booking{r: r, pods: r.Pods, ph: r.Placeholders})
			continue
		}
		// best-effort-atomic: the plan decides; consuming pods that exist are planned as themselves.
		if !apimeta.IsStatusConditionTrue(c, ConditionAccepted) {
			update(r, accepted(r))
		}
		k := min(live[key], len(r.Pods))
		var gang []*corev1.Pod
		for _, p := range r.Pods[k:] {
			gang = append(gang, requestPod(p, r, len(r.Pods)-k, nil))
		}
		if len(gang) > 0 {
			out.atomic[key], out.pending[key] = gang, r
		}
	}
	if len(booked) == 0 && len(checks) == 0 {
		return out
	}
	// One simulation that may buy nothing: booked room first (each request whole), then the
	// checks, each whole, in name order.
	var pods []*corev1.Pod
	for _, b := range booked {
		for _, p := range b.pods {
			pods = append(pods, requestPod(p, b.r, len(b.pods), ptr.To[int32](bookedPriority)))
		}
	}
	for _, b := range checks {
		for _, p := range b.pods {
			pods = append(pods, requestPod(p, b.r, len(b.pods), ptr.To[int32](checkedPriority)))
		}
	}
	// The pending pods (and expected ones) are planned too, below the bookings and checks, so
	// that those that in-flight and bought nodes were bought for keep their room there first, as
	// in the batch's plan; that they find no other room here buys nothing.
	others, _ := provisionablePods(s.Pods, s.Now, 0)
	pods = append(pods, others...)
	pods = append(pods, s.Expected...)
	flying, bought := inFlight(recs, idx, s.ResourceSlices)
	plan, err := simulator.Simulate(simulator.Input{Snapshot: s.snapshot(pods), Catalog: noPurchase(s.Catalog), Policy: s.Policy,
		Options: simulator.Options{Now: s.Now, Seed: "bookings", InFlight: flying, Bought: bought}})
	if err != nil {
		// Nothing is known: keep the bookings as they are, answer the checks later.
		for _, b := range booked {
			out.keep(b.pods, b.ph, nil)
		}
		return out
	}
	where := map[string]string{}
	for _, n := range plan.ExistingNodes {
		for _, p := range n.Pods {
			where[p] = n.Name
		}
	}
	unplaced := map[string]api.UnschedulablePod{}
	for _, u := range plan.Unschedulable {
		unplaced[u.Pod] = u
	}
	whole := func(b booking) (string, bool) {
		for _, p := range b.pods {
			if u, ok := unplaced[p.Namespace+"/"+p.Name]; ok {
				return u.Reason, false
			}
			if where[p.Namespace+"/"+p.Name] == "" {
				return "no existing or in-flight node holds it", false
			}
		}
		return "", true
	}
	for _, b := range booked {
		if why, ok := whole(b); !ok {
			update(b.r, cond(b.r, ConditionCapacityRevoked, metav1.ConditionTrue, ReasonCapacityRevoked,
				"The booked capacity is gone: "+why))
			continue
		}
		out.keep(b.pods, b.ph, where)
	}
	for _, b := range checks {
		if why, ok := whole(b); ok {
			update(b.r, accepted(b.r), cond(b.r, ConditionProvisioned, metav1.ConditionTrue, ReasonCapacityIsFound, "Capacity is found in the cluster"))
			out.keep(b.pods, b.ph, where)
		} else if b.r.NoRetry {
			update(b.r, accepted(b.r), cond(b.r, ConditionFailed, metav1.ConditionTrue, ReasonCapacityIsNotFound, "Tiler could not find requested capacity: "+why))
		} else {
			update(b.r, accepted(b.r), cond(b.r, ConditionProvisioned, metav1.ConditionFalse, ReasonCapacityIsNotFound,
				"Capacity is not found, Tiler will try to find it later: "+why))
		}
	}
	return out
}

// keep books pods (planned first by the batch, at the highest priority) and their placeholders,
// on the nodes where says.
func (d *requestDecisions) keep(pods, placeholders []*corev1.Pod, where map[string]string) {
	for _, p := range pods {
		d.booked = append(d.booked, requestPod(p, &ProvisioningRequest{}, 0, ptr.To[int32](bookedPriority)))
		if n := where[p.Namespace+"/"+p.Name]; n != "" {
			d.nodes[n] = true
		}
	}
	for _, p := range placeholders {
		if p != nil {
			d.placeholders = append(d.placeholders, p)
		}
	}
}

// tail is s[k:], or nil when s is shorter.
func tail(s []*corev1.Pod, k int) []*corev1.Pod {
	if k >= len(s) {
		return nil
	}
	return s[k:]
}

// permanent reports whether a plan's reason for a gang member means the request cannot be
// satisfied as the policy stands (not a matter of waiting).
func permanent(u api.UnschedulablePod) (api.ReasonCode, bool) {
	code := u.Code
	if code == api.GangIncomplete && u.Cause != "" {
		code = u.Cause
	}
	switch code {
	case api.NeverFits, api.LimitExceeded, api.InvalidRequest, api.QuotaExceeded, api.TeamLimitExceeded:
		return code, true
	}
	return code, false
}

// settleAtomic decides the best-effort-atomic requests the plan placed or not: Provisioned once
// every pod of the gang has a place (written after the launches it needs), Failed when the plan
// says it cannot be satisfied, Provisioned=False otherwise. Their placeholders are wanted at once.
func (d *Decision) settleAtomic(rd *requestDecisions, plan *api.Plan, now time.Time) {
	if len(rd.atomic) == 0 || plan == nil {
		return
	}
	newNode := map[string]string{}
	for _, n := range plan.NewNodes {
		for _, p := range n.Pods {
			newNode[p] = n.Name
		}
	}
	unplaced := map[string]api.UnschedulablePod{}
	for _, u := range plan.Unschedulable {
		unplaced[u.Pod] = u
	}
	keys := make([]string, 0, len(rd.atomic))
	for k := range rd.atomic {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t := metav1.NewTime(now)
	for _, key := range keys {
		r, gang := rd.pending[key], rd.atomic[key]
		var failed *api.UnschedulablePod
		var nodes []string
		for _, p := range gang {
			k := p.Namespace + "/" + p.Name
			if u, ok := unplaced[k]; ok {
				failed = &u
				break
			}
			if n := newNode[k]; n != "" && !slices.Contains(nodes, n) {
				nodes = append(nodes, n)
			}
		}
		var c metav1.Condition
		switch {
		case failed == nil && len(nodes) > 0:
			c = metav1.Condition{Type: ConditionProvisioned, Status: metav1.ConditionTrue, Reason: ReasonCapacityIsProvisioned,
				Message: fmt.Sprintf("Capacity is provisioned: %d node(s) bought for the request's %d pods", len(nodes), len(gang))}
		case failed == nil:
			c = metav1.Condition{Type: ConditionProvisioned, Status: metav1.ConditionTrue, Reason: ReasonCapacityIsFound, Message: "Capacity is found in the cluster"}
		default:
			if code, ok := permanent(*failed); ok {
				c = metav1.Condition{Type: ConditionFailed, Status: metav1.ConditionTrue, Reason: string(code), Message: failed.Reason}
			} else {
				c = metav1.Condition{Type: ConditionProvisioned, Status: metav1.ConditionFalse, Reason: ReasonCapacityIsNotFound,
					Message: "Capacity is not found, Tiler will try to find it later: " + failed.Reason}
			}
		}
		c.ObservedGeneration, c.LastTransitionTime = r.Generation, t
		base := r.Conditions
		for _, u := range rd.updates { // the Accepted condition decided before the plan
			if u.Namespace == r.Namespace && u.Name == r.Name {
				base = u.Conditions
			}
		}
		conds, changed := setCondition(base, c)
		if !changed {
			continue
		}
		up := RequestUpdate{Namespace: r.Namespace, Name: r.Name, Conditions: conds}
		if c.Type == ConditionProvisioned && c.Status == metav1.ConditionTrue {
			up.AfterLaunch = nodes
			k := len(r.Pods) - len(gang)
			for _, p := range tail(r.Placeholders, k) {
				if p != nil {
					rd.placeholders = append(rd.placeholders, p)
				}
			}
		}
		rd.updates = slices.DeleteFunc(rd.updates, func(u RequestUpdate) bool { return u.Namespace == r.Namespace && u.Name == r.Name })
		rd.updates = append(rd.updates, up)
	}
}

// provisioningRequestResource is the ProvisioningRequest version the controller watches.
var provisioningRequestResource = schema.GroupVersionResource{Group: "autoscaling.x-k8s.io", Version: "v1", Resource: "provisioningrequests"}

// watchProvisioningRequests asks for a batch whenever a ProvisioningRequest changes, when the
// controller answers them and the API server serves them (discovery, at Start); otherwise
// requests are seen by the batches that run anyway (Config.ResyncPeriod at the latest).
func (c *Controller) watchProvisioningRequests(ctx context.Context) {
	if c.provreqs == nil || c.dyn == nil {
		return
	}
	gv := provisioningRequestResource.GroupVersion().String()
	served, err := servesResource(c.kube.Discovery().ServerResourcesForGroupVersion, gv, provisioningRequestResource.Resource)
	if err != nil || !served {
		c.log.Info("ProvisioningRequests not watched: the API server does not serve them (yet); batches read them anyway",
			zap.String("groupVersion", gv), zap.Error(err))
		return
	}
	f := dynamicinformer.NewDynamicSharedInformerFactory(c.dyn, 0)
	_, _ = f.ForResource(provisioningRequestResource).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.poke() },
		UpdateFunc: func(any, any) { c.poke() },
		DeleteFunc: func(any) { c.poke() },
	})
	f.Start(ctx.Done())
}

// splitAfterLaunch splits a batch's updates into those that wait for launches (AfterLaunch) and
// the others.
func splitAfterLaunch(updates []RequestUpdate) (now, later []RequestUpdate) {
	for _, u := range updates {
		if len(u.AfterLaunch) > 0 {
			later = append(later, u)
		} else {
			now = append(now, u)
		}
	}
	return now, later
}

// writeRequests writes the conditions the batch decided (at now); an update that waits for
// launches is written only when the cloud took them all (launched).
func (c *Controller) writeRequests(ctx context.Context, log *zap.Logger, updates []RequestUpdate, launched []string, now time.Time) {
	if c.provreqs == nil {
		return
	}
	for _, u := range updates {
		if missing := slices.ContainsFunc(u.AfterLaunch, func(n string) bool { return !slices.Contains(launched, n) }); missing {
			log.Info("ProvisioningRequest not marked provisioned: a launch of its nodes failed", zap.String(keyRequest, u.Namespace+"/"+u.Name))
			continue
		}
		if err := c.provreqs.SetConditions(ctx, u.Namespace, u.Name, u.Conditions); err != nil {
			log.Warn("updating a ProvisioningRequest's conditions", zap.String(keyRequest, u.Namespace+"/"+u.Name), zap.Error(err))
			continue
		}
		for _, cd := range u.Conditions {
			if cd.LastTransitionTime.Time.Equal(now) {
				log.Info("ProvisioningRequest condition", zap.String(keyRequest, u.Namespace+"/"+u.Name), zap.String("type", cd.Type),
					zap.String("status", string(cd.Status)), zap.String(keyReason, cd.Reason))
			}
		}
	}
}
