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
	keySimulation    = "simulation"
	keyPod           = "pod"
	keyReason        = "reason"
	keyNode          = "node"
	keyLaunchID      = "launch_id"
	keyInstanceType  = "instance_type"
	keyZone          = "zone"
	keyCapacityType  = "capacity_type"
	keyPrice         = "price_per_hour"
	keyInstanceID    = "instance_id"
	keyAttempt       = "attempt"
	keyRetries       = "retries"
	keyRetryIn       = "retry_in"
	keyError         = "error_kind"
	keyConfigMap     = "configmap"
	keyImage         = "image"
	keyPriorityClass = "priority_class"
	keyMIGConfig     = "mig_config"
	keyGPUs          = "gpus"
	// The offering the cloud launched when it was a fallback, not the planned one.
	keyLaunchedType         = "launched_instance_type"
	keyLaunchedZone         = "launched_zone"
	keyLaunchedCapacityType = "launched_capacity_type"
	keyLaunchedPrice        = "launched_price_per_hour"
	keyFallback             = "fallback"
	// Disruption actions.
	keyAction = "action_id"
	keyNodes  = "nodes"
	keyStep   = "step"
	// ProvisioningRequests.
	keyRequest = "provisioning_request"
)
