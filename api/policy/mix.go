package policy

import (
	"fmt"
	"math"
	"regexp"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tiler-dev/tiler/api"
)

// Mix is a pool's purchasing mix, after an EC2 fleet's OnDemandBaseCapacity and
// OnDemandPercentageAboveBaseCapacity. Capacity is counted in nodes (the pool's existing,
// in-flight and new nodes together): the base is what stays up whatever spot does, and a node is
// the unit a spot interruption takes away.
type Mix struct {
	// OnDemandBase is the number of the pool's nodes that are on-demand (reserved capacity
	// counts as on-demand) before any is spot.
	OnDemandBase int `json:"onDemandBase,omitempty"`
	// SpotAbove is the most, in percent, of the nodes above the base that may be spot; the rest
	// (rounded up) is on-demand. Nil is 100: above the base the cheapest offering wins. The
	// simulation never buys spot to reach the share: it is a ceiling on spot, never a floor.
	SpotAbove *int `json:"spotAbove,omitempty"`
	// SpotDiversity K spreads the replicas of one owner (Deployment/ReplicaSet, StatefulSet,
	// Job) over spot offerings (instance type × zone): at most ceil(r/K) of the owner's r
	// replicas in the pool run on one spot offering, so one spot interruption event takes at
	// most that many. Replicas that cannot be spread run on-demand. 0 or 1: no spreading.
	SpotDiversity int `json:"spotDiversity,omitempty"`
}

// Reservation is reserved or committed capacity of a pool: an On-Demand Capacity Reservation (or
// capacity covered by a reserved instance or savings plan) of count nodes of one instance type in
// one zone, priced at its effective $/h. The simulation buys those nodes first whenever they are
// the cheapest fit, as many as the reservation has left.
//
// A reservation that holds capacity for a time only and whose nodes end with it (an EC2 Capacity
// Block for ML) sets StartsAt and EndsAt: nothing is planned onto it before StartsAt
// nor from EndsAt less DrainBefore on, and from then its nodes are replaced (reason
// ReservationEnding, under no budget: the cloud ends them all at once) so that their pods move
// before the cloud ends the nodes (EC2 warns 40 minutes before a Capacity Block's end and
// terminates its instances from 30 minutes before).
type Reservation struct {
	// ID names the reservation, which the launch targets: on AWS the ODCR ID (cr-…), on GCP the
	// reservation's name in the provider's project. It becomes the node label
	// tiler.dev/capacity-reservation.
	ID           string               `json:"id"`
	InstanceType api.InstanceTypeName `json:"instanceType"`
	Zone         string               `json:"zone"`
	// Count is how many nodes the reservation holds.
	Count int `json:"count"`
	// PricePerHour is the effective price of a node on the reservation: 0 when it is paid for
	// anyway (the marginal cost of an idle ODCR), or the committed rate.
	PricePerHour float64 `json:"pricePerHour"`
	// StartsAt and EndsAt bound the time the reservation holds its capacity (RFC 3339); unset,
	// it holds it for good.
	StartsAt *metav1.Time `json:"startsAt,omitempty"`
	EndsAt   *metav1.Time `json:"endsAt,omitempty"`
	// DrainBefore is how long before EndsAt the reservation stops being planned onto and its
	// nodes start to be replaced; default DefaultReservationDrainBefore. Without EndsAt it
	// applies to the end the cloud reports (an EC2 Capacity Block's, read by the controller).
	DrainBefore *Duration `json:"drainBefore,omitempty"`
}

// DefaultReservationDrainBefore is a reservation's drainBefore when unset: an hour, so that the
// nodes of an EC2 Capacity Block are replaced before EC2 starts ending them, 30 minutes before its
// end, with time for the replacements to boot and the pods to move.
const DefaultReservationDrainBefore = time.Hour

// ReservationTerminationLead is how long before a reservation's end the cloud starts ending its
// instances (an EC2 Capacity Block's: 30 minutes). A pool's terminationGracePeriod on such a
// node's action ends by then at the latest, so that the pods it deletes end gracefully before
// the cloud takes the node.
const ReservationTerminationLead = 30 * time.Minute

// DrainFrom returns when the reservation stops being planned onto and its nodes start to be
// replaced: EndsAt less DrainBefore; false when it does not end.
func (r *Reservation) DrainFrom() (time.Time, bool) {
	if r.EndsAt == nil {
		return time.Time{}, false
	}
	drain := DefaultReservationDrainBefore
	if r.DrainBefore != nil {
		drain = r.DrainBefore.Duration.Duration
	}
	return r.EndsAt.Add(-drain), true
}

// Plannable reports whether new nodes may be planned onto the reservation at now: it has started
// and is not draining.
func (r *Reservation) Plannable(now time.Time) bool {
	if r.StartsAt != nil && now.Before(r.StartsAt.Time) {
		return false
	}
	from, ends := r.DrainFrom()
	return !ends || now.Before(from)
}

var reservationIDRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?$`)

// maxMixNodes bounds counts of nodes in the mix and reservations: far above any pool.
const maxMixNodes = 100000

func (m *Mix) validate(pl *Pool) error {
	switch {
	case m.OnDemandBase < 0 || m.OnDemandBase > maxMixNodes:
		return fmt.Errorf("onDemandBase %d must be in 0..%d", m.OnDemandBase, maxMixNodes)
	case m.SpotAbove != nil && (*m.SpotAbove < 0 || *m.SpotAbove > 100):
		return fmt.Errorf("spotAbove %d must be a percentage in 0..100", *m.SpotAbove)
	case m.SpotDiversity < 0 || m.SpotDiversity > 100:
		return fmt.Errorf("spotDiversity %d must be in 0..100", m.SpotDiversity)
	}
	if (m.OnDemandBase > 0 || m.SpotAbove != nil && *m.SpotAbove < 100) && !pl.AllowsCapacityType(api.OnDemand) {
		field := "onDemandBase"
		if m.OnDemandBase == 0 {
			field = "spotAbove"
		}
		return fmt.Errorf("%s needs on-demand capacity, but the pool's capacityTypes allow only %v", field, pl.CapacityTypes)
	}
	if m.SpotDiversity > 1 && !pl.AllowsCapacityType(api.Spot) {
		return fmt.Errorf("spotDiversity needs spot capacity, but the pool's capacityTypes allow only %v", pl.CapacityTypes)
	}
	if mx := pl.Limits.MaxNodes; mx != nil && m.OnDemandBase > *mx {
		return fmt.Errorf("onDemandBase %d exceeds limits.maxNodes %d", m.OnDemandBase, *mx)
	}
	return nil
}

// SpotAbovePercent returns the mix's spotAbove, 100 when unset.
func (m *Mix) SpotAbovePercent() int {
	if m == nil || m.SpotAbove == nil {
		return 100
	}
	return *m.SpotAbove
}

// OnDemandNeeded returns how many of total nodes the mix wants on-demand: the base (or all when
// fewer), and the on-demand share of the rest, rounded up.
func (m *Mix) OnDemandNeeded(total int) int {
	if m == nil || total <= 0 {
		return 0
	}
	if total <= m.OnDemandBase {
		return total
	}
	above := total - m.OnDemandBase
	return m.OnDemandBase + (above*(100-m.SpotAbovePercent())+99)/100
}

func (r *Reservation) validate(pl *Pool) error {
	if r.ID == "" {
		return fmt.Errorf("id must be set (the reservation's ID, e.g. cr-0123456789abcdef0)")
	}
	if len(r.ID) > validation.LabelValueMaxLength || !reservationIDRE.MatchString(r.ID) {
		return fmt.Errorf("id %q must be a label value: letters, digits, '-', '_', '.', at most %d characters", r.ID, validation.LabelValueMaxLength)
	}
	if r.InstanceType == "" {
		return fmt.Errorf("instanceType must be set")
	}
	if r.Zone == "" {
		return fmt.Errorf("zone must be set")
	}
	if r.Count < 1 || r.Count > maxMixNodes {
		return fmt.Errorf("count %d must be in 1..%d", r.Count, maxMixNodes)
	}
	if math.IsNaN(r.PricePerHour) || r.PricePerHour < 0 || r.PricePerHour > maxPrice {
		return fmt.Errorf("pricePerHour %g must be in 0..%g (0 when the reservation is paid for anyway)", r.PricePerHour, float64(maxPrice))
	}
	if len(pl.InstanceTypes) > 0 && !contains(pl.InstanceTypes, r.InstanceType) {
		return fmt.Errorf("instanceType %q is not among the pool's instanceTypes", r.InstanceType)
	}
	if len(pl.Zones) > 0 && !contains(pl.Zones, r.Zone) {
		return fmt.Errorf("zone %q is not among the pool's zones", r.Zone)
	}
	if r.StartsAt != nil && r.EndsAt != nil && !r.EndsAt.After(r.StartsAt.Time) {
		return fmt.Errorf("endsAt %s must be after startsAt %s", r.EndsAt.UTC().Format(time.RFC3339), r.StartsAt.UTC().Format(time.RFC3339))
	}
	if r.DrainBefore != nil && r.DrainBefore.Duration.Duration <= 0 {
		return fmt.Errorf("drainBefore %s must be positive", r.DrainBefore.Duration.Duration)
	}
	return nil
}

// validateMix checks the pools' mix and reservations; reservation IDs are unique in the policy.
func (p *CostPolicy) validateMix() error {
	ids := map[string]string{}
	for i := range p.Pools {
		pl := &p.Pools[i]
		if pl.Mix != nil {
			if err := pl.Mix.validate(pl); err != nil {
				return fmt.Errorf("policy: pools[%d].mix.%w", i, err)
			}
		}
		for j := range pl.Reservations {
			r := &pl.Reservations[j]
			field := fmt.Sprintf("pools[%d].reservations[%d]", i, j)
			if !pl.AllowsCapacityType(api.OnDemand) {
				return fmt.Errorf("policy: %s: a reservation is on-demand capacity, but pools[%d].capacityTypes allow only %v", field, i, pl.CapacityTypes)
			}
			if err := r.validate(pl); err != nil {
				return fmt.Errorf("policy: %s.%w", field, err)
			}
			if prev, dup := ids[r.ID]; dup {
				return fmt.Errorf("policy: %s.id %q is already listed at %s", field, r.ID, prev)
			}
			ids[r.ID] = field
		}
	}
	return nil
}

func contains[T comparable](s []T, x T) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}
