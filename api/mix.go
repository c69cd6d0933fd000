package api

// Keys of the purchasing mix (policy pools' mix and reservations, simulator/mix.go).
const (
	// AnnotationMaxSpotShare, on a pod (set it on the pod template of a Deployment, StatefulSet
	// or Job), caps the share of its owner's replicas that may run on spot capacity: an integer
	// percentage 0–100 with an optional '%' ("0%" keeps every replica on-demand, "50%" at most
	// half, rounded down, on spot). A pod without an owner is its own owner.
	AnnotationMaxSpotShare = "tiler.dev/max-spot-share"
	// LabelCapacityReservation names the capacity reservation (a policy pool's reservations[].id,
	// an EC2 On-Demand Capacity Reservation ID) a node was launched into. Nodes carrying it count
	// against the reservation's count.
	LabelCapacityReservation = "tiler.dev/capacity-reservation"
)

// KeepPurchasingMix: removing the node (or replacing it by spot) would leave its pool fewer
// on-demand nodes than its mix (onDemandBase, spotAbove) needs.
const KeepPurchasingMix KeepReason = "PurchasingMix"
