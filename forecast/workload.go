package forecast

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/yaml"
)

// WorkloadForecast declares, in the cost-policy ConfigMap, how to forecast one workload's
// capacity. Decode it with ParseWorkloadForecasts, which rejects unknown fields and validates.
type WorkloadForecast struct {
	// Workload is the workload whose replicas the forecast sizes.
	Workload WorkloadRef `json:"workload"`
	// LoadQuery is the PromQL for the workload's load in the units of PerReplica (e.g.
	// requests/s); its history feeds the seasonal model and its current value is the actual.
	LoadQuery string `json:"loadQuery"`
	// QueueDepthQuery is the PromQL for requests waiting; empty disables the queue model.
	QueueDepthQuery string `json:"queueDepthQuery,omitempty"`
	// PerReplica is the load one replica serves at its latency objective.
	PerReplica float64 `json:"perReplica"`
	// GPUsPerReplica is the GPUs one replica requests.
	GPUsPerReplica int `json:"gpusPerReplica"`
	// LeadTime is how far ahead to buy capacity; zero means the pool's boot time plus LeadBuffer.
	LeadTime Duration `json:"leadTime,omitempty"`
	// Margin sets the safety margin of the forecast; empty means the DefaultMargin quantile.
	Margin Margin `json:"margin,omitempty"`
	// QueueTargetPerGPU is the queued requests per GPU at which capacity is added (5–10 suits
	// batching LLM servers); zero means DefaultQueueTargetPerGPU.
	QueueTargetPerGPU float64 `json:"queueTargetPerGPU,omitempty"`
	// MinReplicas and MaxReplicas bound the reservation; MaxReplicas is required.
	MinReplicas int `json:"minReplicas,omitempty"`
	MaxReplicas int `json:"maxReplicas"`
	// Placeholders materialises the reservation as real pods of the lowest priority, one per
	// reserved replica, with the template's resources: the room bought ahead is then held by pods
	// the scheduler preempts the moment the workload's (or any other) pods need it.
	Placeholders bool `json:"placeholders,omitempty"`
	// TimeZone is the IANA time zone (e.g. Asia/Tokyo) of the workload's week: its Saturday and
	// Sunday are the weekend the weekday/weekend model tells apart. Empty means UTC. When one to
	// four weeks of the load show another weekend, the forecaster uses the load's (kinds.go).
	TimeZone string `json:"timeZone,omitempty"`
}

// WorkloadRef names a Deployment or StatefulSet, or carries an inline pod template for a
// workload that does not exist yet. Exactly one of the two forms is set.
type WorkloadRef struct {
	// Kind is Deployment or StatefulSet.
	Kind string `json:"kind,omitempty"`
	// Namespace and Name identify the workload.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	// Template is an inline PodTemplateSpec (metadata and spec). It is kept as raw JSON here
	// because k8s.io/api pulls net/http into this pure package; the controller decodes it strictly
	// into a corev1.PodTemplateSpec.
	Template json.RawMessage `json:"template,omitempty"`
}

// Margin is the safety margin: a quantile of past forecast errors, or a multiplier of the point
// forecast. At most one is set.
type Margin struct {
	// Quantile in [0.5, 1) sizes capacity for that fraction of past errors.
	Quantile float64 `json:"quantile,omitempty"`
	// Multiplier ≥ 1 sizes capacity at Point·Multiplier.
	Multiplier float64 `json:"multiplier,omitempty"`
}

// Duration is a time.Duration written as a duration string ("15m", "1d", see ParseDuration) in
// YAML and JSON.
type Duration struct{ time.Duration }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string such as \"15m\": %w", err)
	}
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// FieldError is a validation error naming the field at fault.
type FieldError struct {
	// Field is the camelCase path of the field, e.g. "workload.kind".
	Field string
	// Message says what is wrong.
	Message string
}

// Error implements error.
func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// ParseWorkloadForecasts strictly decodes a YAML or JSON list of WorkloadForecast (unknown fields
// fail) and validates each; errors name the list index and the field.
func ParseWorkloadForecasts(data []byte) ([]WorkloadForecast, error) {
	var out []WorkloadForecast
	if err := yaml.UnmarshalStrict(data, &out); err != nil {
		return nil, fmt.Errorf("decoding workload forecasts: %w", err)
	}
	var errs []error
	for i := range out {
		if err := out[i].Validate(); err != nil {
			errs = append(errs, fmt.Errorf("forecasts[%d]: %w", i, err))
		}
	}
	return out, errors.Join(errs...)
}

// Validate checks the declaration; each error is a *FieldError naming the field, joined with
// errors.Join when several fields are wrong.
func (f WorkloadForecast) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	f.Workload.validate(bad)
	if f.LoadQuery == "" {
		bad("loadQuery", "must be set")
	}
	if !(f.PerReplica > 0) {
		bad("perReplica", "must be positive, got %g", f.PerReplica)
	}
	if f.GPUsPerReplica < 1 {
		bad("gpusPerReplica", "must be at least 1, got %d", f.GPUsPerReplica)
	}
	if f.LeadTime.Duration < 0 {
		bad("leadTime", "must not be negative, got %s", f.LeadTime)
	}
	f.Margin.validate(bad)
	if f.QueueTargetPerGPU < 0 {
		bad("queueTargetPerGPU", "must be positive, got %g", f.QueueTargetPerGPU)
	}
	if f.MinReplicas < 0 {
		bad("minReplicas", "must not be negative, got %d", f.MinReplicas)
	}
	if f.MaxReplicas < 1 || f.MaxReplicas < f.MinReplicas {
		bad("maxReplicas", "must be at least 1 and at least minReplicas (%d), got %d", f.MinReplicas, f.MaxReplicas)
	}
	if _, err := f.location(); err != nil {
		bad("timeZone", "%v", err)
	}
	return errors.Join(errs...)
}

func (w WorkloadRef) validate(bad func(field, format string, args ...any)) {
	hasRef := w.Kind != "" || w.Name != "" || w.Namespace != ""
	hasTemplate := len(w.Template) > 0
	switch {
	case hasRef && hasTemplate:
		bad("workload", "set either kind/namespace/name or template, not both")
	case hasTemplate:
		var obj map[string]json.RawMessage
		if err := json.NewDecoder(bytes.NewReader(w.Template)).Decode(&obj); err != nil || obj["spec"] == nil {
			bad("workload.template", "must be a pod template object with a spec")
		}
	case !hasRef:
		bad("workload", "must name a Deployment or StatefulSet or carry a template")
	default:
		if w.Kind != "Deployment" && w.Kind != "StatefulSet" {
			bad("workload.kind", "must be Deployment or StatefulSet, got %q", w.Kind)
		}
		if w.Namespace == "" {
			bad("workload.namespace", "must be set")
		}
		if w.Name == "" {
			bad("workload.name", "must be set")
		}
	}
}

func (m Margin) validate(bad func(field, format string, args ...any)) {
	switch {
	case m.Quantile != 0 && m.Multiplier != 0:
		bad("margin", "set quantile or multiplier, not both")
	case m.Quantile != 0 && (m.Quantile < 0.5 || m.Quantile >= 1):
		bad("margin.quantile", "must be in [0.5, 1), got %g", m.Quantile)
	case m.Multiplier != 0 && m.Multiplier < 1:
		bad("margin.multiplier", "must be at least 1, got %g", m.Multiplier)
	}
}

// String names the workload for Events and logs.
func (w WorkloadRef) String() string {
	if len(w.Template) > 0 {
		return "inline template"
	}
	return w.Kind + "/" + w.Namespace + "/" + w.Name
}

// location is the time zone of TimeZone, UTC when empty.
func (f WorkloadForecast) location() (*time.Location, error) {
	if f.TimeZone == "" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(f.TimeZone)
	if err != nil {
		return nil, fmt.Errorf("%q is not an IANA time zone name (e.g. Europe/Berlin)", f.TimeZone)
	}
	return loc, nil
}
