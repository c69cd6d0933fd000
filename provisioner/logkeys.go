package provisioner

// Log keys, snake_case, in one place.
const (
	keyBatch         = "batch_id"
	keyPending       = "pending_pods"
	keyNewNodes      = "new_nodes"
	keyCost          = "cost_per_hour"
	keyLowerBound    = "lower_bound_per_hour"
	keyUnschedulable = "unschedulable_pods"
	keyInFlight      = "in_flight"
	keyPod           = "pod"
	keyReason        = "reason"
	keyNode          = "node"
	keyLaunchID      = "launch_id"
	keyInstanceType  = "instance_type"
	keyZone          = "zone"
	keyCapacityType  = "capacity_type"
	keyPrice         = "price_per_hour"
	keyInstanceID    = "instance_id"
	keyError         = "error_kind"
	keyConfigMap     = "configmap"
)
