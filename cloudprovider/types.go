package cloudprovider

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
)

// LaunchRequest asks for one instance for one planned node.
type LaunchRequest struct {
	// LaunchID is unique per planned node and recorded before the call; a provider that already
	// has an instance with this ID returns it instead of launching another.
	LaunchID string
	// NodeName is the name the instance's Node registers under (where the cloud allows choosing it).
	NodeName string
	Cluster  string
	Pool     string
	// Offering is the preferred offering; Fallbacks are acceptable alternatives in order.
	Offering  api.Offering
	Fallbacks []api.Offering
	// Labels are the labels of the node launched as Offering.
	Labels map[string]string
	// FallbackLabels are the labels of the node launched as a fallback, for each fallback whose
	// labels differ from Labels (another instance type, zone or capacity type changes the labels
	// that name them). Providers read them through LabelsFor.
	FallbackLabels map[api.Offering]map[string]string
	Taints         []corev1.Taint
	GPU            api.GPUConfig
	// CapacityReservation, when set, is the capacity reservation (an EC2 ODCR ID, a Compute Engine
	// reservation name) to launch Offering into (an on-demand offering); Labels then carry
	// api.LabelCapacityReservation. A provider without reservations ignores it.
	CapacityReservation string
}

// WithoutReservation is req for open capacity: no reservation, and none in its labels (the
// fallbacks' labels carry none).
func WithoutReservation(req LaunchRequest) LaunchRequest {
	req.CapacityReservation = ""
	if _, ok := req.Labels[api.LabelCapacityReservation]; ok {
		req.Labels = maps.Clone(req.Labels)
		delete(req.Labels, api.LabelCapacityReservation)
	}
	return req
}

// LabelsFor returns the labels of the node when it is launched as o: FallbackLabels[o] when the
// request has them, else Labels.
func (r LaunchRequest) LabelsFor(o api.Offering) map[string]string {
	if l, ok := r.FallbackLabels[o]; ok {
		return l
	}
	return r.Labels
}

// The provider-neutral instance states of Instance.State.
const (
	StatePending     = "pending"
	StateRunning     = "running"
	StateTerminating = "terminating"
	StateTerminated  = "terminated"
)

// Instance is a cloud instance owned by this cluster.
type Instance struct {
	ID       string
	LaunchID string
	NodeName string
	Pool     string
	Offering api.Offering
	// State is the provider's lifecycle state, normalised to pending, running, terminating or
	// terminated.
	State string
	// EndCode is the cloud's own code for why the instance is ending or ended, e.g. EC2's
	// Server.SpotInstanceTermination; empty while it runs, and when the cloud does not say.
	EndCode string
	// CapacityLost reports that the cloud ended the instance for want of capacity: a spot
	// instance taken back, or capacity lost between the launch and the boot. The offering is then
	// as unavailable as one a launch call was refused for; an instance a person deleted says
	// nothing about capacity.
	CapacityLost bool
	// Image is the image the instance boots from, as the provider names it (an AMI ID, a GCE
	// image); empty when the provider does not say. Compared with ImageChooser.ImageFor, it tells
	// a node booted before the provider's image changed.
	Image string
	// Settings digests the launch settings the instance was launched with besides its image and
	// its node's labels and taints (network, security groups, identity, disk, bootstrap), as the
	// provider records it on the instance; empty when the provider does not say (and on instances
	// launched before it did). Compared with SettingsChooser.LaunchSettings, it tells a node
	// launched before an operator changed those settings.
	Settings string
	// CapacityReservation is the capacity reservation the instance runs in, as the provider
	// reports it: LaunchRequest.CapacityReservation when the reservation took the launch, empty
	// when the node went to open capacity (the reservation was full, gone, or the provider
	// launches into none), and then it is paid at the open price.
	CapacityReservation string
	PricePerHour        float64
	LaunchedAt          time.Time
	Tags                map[string]string
}

// Ending reports whether the instance is terminating or terminated: it serves no pods any more,
// and nothing brings it back.
func (i *Instance) Ending() bool { return i.State == StateTerminating || i.State == StateTerminated }

// Provider launches, lists and deletes instances.
type Provider interface {
	// Name returns the provider's name: aws, gcp or sim.
	Name() string
	// Create launches an instance for req. It is idempotent on req.LaunchID. It returns an
	// *InsufficientCapacityError when no offering of the request could be had (naming the
	// offerings that failed), a *QuotaError when an account limit stops it, or another error for
	// I/O and bad input.
	Create(ctx context.Context, req LaunchRequest) (*Instance, error)
	// Get returns the instance with the given ID, or a *NotFoundError.
	Get(ctx context.Context, id string) (*Instance, error)
	// List returns every instance of the cluster that is not terminated, in ID order.
	List(ctx context.Context) ([]*Instance, error)
	// Delete terminates the instance. Deleting an instance that is already gone returns a
	// *NotFoundError, which callers treat as success.
	Delete(ctx context.Context, id string) error
}

// ImageChooser is implemented by providers that choose the image a node boots from: a setting of
// the provider that an operator changes to roll the fleet onto a patched OS or GPU driver (an
// AMI). The controller replaces the nodes whose instance booted from another image as drifted,
// under the pools' disruption budgets.
type ImageChooser interface {
	// ImageFor returns the image a node with GPU configuration gpu (the zero value for a node
	// without one) boots from when launched now, named as Instance.Image names it; "" when the
	// provider does not choose it (a launch template of the user's own), and then no node is
	// drifted by its image. It may ask the cloud (an AMI named by an SSM parameter); an error
	// means the image is not known now.
	ImageFor(ctx context.Context, gpu api.GPUConfig) (string, error)
}

// SettingsChooser is implemented by providers whose launches carry settings of the provider's own
// besides the image (the AWS subnets, security groups, instance profile and cluster bootstrap; the
// GCE network, service account, disk and metadata). The controller replaces the nodes launched
// with other settings than a launch now gets as drifted, under the pools' disruption budgets.
type SettingsChooser interface {
	// LaunchSettings returns the Instance.Settings of an instance launched now in zone; "" when
	// the provider does not record them, and then no node is drifted by its settings. It may ask
	// the cloud (the version an AWS launch template's $Default names now); an error means the
	// settings are not known now, and no node drifts by them.
	LaunchSettings(ctx context.Context, zone string) (string, error)
}

// ReservationWindow is when a capacity reservation holds its capacity; a zero time is not known.
type ReservationWindow struct {
	Start, End time.Time
}

// ReservationReader is implemented by providers that can say when capacity reservations whose
// instances end with them hold their capacity (an EC2 Capacity Block's start and end dates), so
// that a policy need not copy them (policy.Reservation's startsAt and endsAt).
type ReservationReader interface {
	// ReservationWindows returns the windows the cloud reports for those of ids whose instances
	// end with them; a reservation it does not know, or whose instances outlive it, is left out.
	ReservationWindows(ctx context.Context, ids []string) (map[string]ReservationWindow, error)
}

// GarbageCollector is implemented by providers that leave cloud objects of their own behind
// launches (the AWS provider's managed launch templates). The controller calls CollectGarbage
// periodically, on the leader only: a standby does not know what the leader still uses.
type GarbageCollector interface {
	// CollectGarbage deletes the provider's objects no launch needs any more and returns what
	// it deleted, by name.
	CollectGarbage(ctx context.Context) ([]string, error)
}

// UnavailableReporter is a Provider whose Create can launch one offering of a request after
// finding others unavailable: an EC2 instant fleet whose errorSet names the pools that had no
// capacity while another pool launched (HTTP 200, partial success), or GCE fallbacks tried in
// turn. Create alone would lose those, and the next plan could pick an unavailable offering again.
// The controller calls CreateReportingUnavailable instead of Create when the provider has it.
type UnavailableReporter interface {
	Provider
	// CreateReportingUnavailable is Create, with the same idempotence and error contract, that
	// also returns the offerings found unavailable during this call (no capacity, or an account
	// limit), whether or not another offering launched, each once and in type, zone, capacity
	// type order. The caller keeps them out of its plans for as long as it keeps out those an
	// *InsufficientCapacityError names. Offerings that failed for other reasons (a bad launch
	// template, permissions) are not listed; they are in the error.
	CreateReportingUnavailable(ctx context.Context, req LaunchRequest) (*Instance, []api.Offering, error)
}

// SortOfferings orders offerings by instance type, zone and capacity type and drops repeats.
func SortOfferings(refs []api.Offering) []api.Offering {
	out := slices.Clone(refs)
	slices.SortFunc(out, compareOfferings)
	return slices.Compact(out)
}

// compareOfferings orders offerings by instance type, zone and capacity type.
func compareOfferings(a, b api.Offering) int {
	return cmp.Or(cmp.Compare(a.InstanceType, b.InstanceType), cmp.Compare(a.Zone, b.Zone),
		cmp.Compare(a.CapacityType, b.CapacityType))
}

// InterruptionKind says what the cloud announced.
type InterruptionKind string

const (
	// SpotInterruption is a notice that spot capacity is about to be reclaimed.
	SpotInterruption InterruptionKind = "spot-interruption"
	// RebalanceRecommendation is an early warning of elevated interruption risk.
	RebalanceRecommendation InterruptionKind = "rebalance-recommendation"
	// StateChange reports that an instance stopped or terminated.
	StateChange InterruptionKind = "state-change"
	// Preemption is a GCP spot VM preemption.
	Preemption InterruptionKind = "preemption"
)

// Interruption is an announcement about one instance.
type Interruption struct {
	InstanceID string
	Kind       InterruptionKind
	// State is set for StateChange (e.g. stopping, terminated).
	State string
	At    time.Time
	// Deadline is when the cloud reclaims the instance: At plus the notice period (two minutes for
	// an EC2 spot interruption), At itself for a GCP preemption or a state change (it is going or
	// gone), zero when the notice carries none (a rebalance recommendation).
	Deadline time.Time
	// Receipt is the source's opaque handle for acknowledging the notice (InterruptionAcker): an
	// SQS receipt handle, for instance. Empty for sources that acknowledge in Poll.
	Receipt string
}

// SpotInterruptionNotice is the notice period of an EC2 spot interruption warning: the instance
// is reclaimed two minutes after the event.
const SpotInterruptionNotice = 2 * time.Minute

// InterruptionSource delivers the cloud's interruption notices.
type InterruptionSource interface {
	// Poll returns the notices received since the last call. A source that is no
	// InterruptionAcker acknowledges them here; an InterruptionAcker leaves them unacknowledged
	// until Ack. An error means none were acknowledged and the same notices may come again.
	Poll(ctx context.Context) ([]Interruption, error)
}

// InterruptionAcker is an InterruptionSource whose notices stay unacknowledged after Poll until
// the controller has handled them durably (the node annotated, the launch removal started, or
// the notice found to need nothing), so that a controller that dies or loses leadership in
// between gets them again: a notice polled and never acknowledged is delivered again after the
// source's visibility timeout (an SQS queue's). Handling a notice twice must therefore be
// harmless, and the controller's is.
type InterruptionAcker interface {
	InterruptionSource
	// Ack acknowledges notices polled from this source, by their Receipt, so that they never come
	// again. It is called once per poll with the notices handled. An error means some may come
	// again, which is harmless; the controller logs it and goes on.
	Ack(ctx context.Context, notices []Interruption) error
}
