package prescale

// Log keys, snake_case, in one place (as provisioner/logkeys.go for the controller).
const (
	keyConfigMap = "configmap"
	keyWorkload  = "workload"
	keyExpected  = "expected_pods"
	keyTarget    = "target_replicas"
	keyCurrent   = "current_replicas"
	keyLead      = "lead"
	keyForecast  = "forecast"
	keyActual    = "actual"
)
