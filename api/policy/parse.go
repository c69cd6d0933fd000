package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"

	"github.com/tiler-dev/tiler/api"

	yamlv2 "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/forecast"
)

// Parse reads a cost policy from YAML or JSON: either a CostPolicy document or a ConfigMap whose
// `policy.yaml` key holds one. Unknown fields and invalid values are errors naming the field.
func Parse(data []byte) (*CostPolicy, error) {
	if err := oneDocument(data); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	var head struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if head.Kind == "ConfigMap" {
		var cm corev1.ConfigMap
		if err := yaml.UnmarshalStrict(data, &cm); err != nil {
			return nil, fmt.Errorf("policy ConfigMap: %w", err)
		}
		doc, ok := cm.Data[ConfigMapKey]
		if !ok {
			return nil, fmt.Errorf("policy ConfigMap %s/%s: data.%s is missing", cm.Namespace, cm.Name, ConfigMapKey)
		}
		p, err := parseDocument([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("policy ConfigMap %s/%s: data.%s: %w", cm.Namespace, cm.Name, ConfigMapKey, err)
		}
		return p, nil
	}
	return parseDocument(data)
}

// FromConfigMap reads the cost policy a ConfigMap holds under ConfigMapKey, as Parse does.
func FromConfigMap(cm *corev1.ConfigMap) (*CostPolicy, error) {
	return Parse([]byte(cm.Data[ConfigMapKey]))
}

func parseDocument(data []byte) (*CostPolicy, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("policy: the document is empty")
	}
	var p CostPolicy
	if err := strictUnmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// oneDocument fails when data holds more than one YAML document (a second CostPolicy after a
// '---' line, content after '...', two JSON objects): the parser reads the first and would ignore
// the rest, so a second policy would silently not apply.
func oneDocument(data []byte) error {
	dec := yamlv2.NewDecoder(bytes.NewReader(data))
	for docs := 0; ; {
		var doc any
		err := dec.Decode(&doc)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil && docs > 0:
			return fmt.Errorf("content after the first document: %w", err)
		case err != nil:
			return err
		case doc != nil:
			docs++
			if docs > 1 {
				return errors.New("a second YAML document: a policy file holds one CostPolicy (or one ConfigMap); put every pool in the one document's pools")
			}
		}
	}
}

// strictUnmarshal decodes YAML or JSON, failing on unknown and duplicate fields with errors that
// carry the field's path (e.g. unknown field "pools[0].instanceFamily").
func strictUnmarshal(data []byte, into any) error {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	strict, err := sigsjson.UnmarshalStrict(js, into)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		return errors.Join(strict...)
	}
	return nil
}

var familyRE = regexp.MustCompile(`^[a-z0-9-]+$`)

// MaxSoftPremiumPercent bounds softConstraints.maxPremiumPercent: a preference may at most
// double the price.
const MaxSoftPremiumPercent = 100

// Validate checks every field; the error names the first invalid one.
func (p *CostPolicy) Validate() error {
	if p.APIVersion != api.GroupVersion {
		return fmt.Errorf("policy: apiVersion must be %s, not %q", api.GroupVersion, p.APIVersion)
	}
	if p.Kind != Kind {
		return fmt.Errorf("policy: kind must be %s, not %q", Kind, p.Kind)
	}
	if len(p.Pools) == 0 {
		return fmt.Errorf("policy: pools must list at least one pool")
	}
	if b := p.Budget; b != nil && !(b.MaxPricePerHour > 0 && b.MaxPricePerHour <= maxPrice) {
		return fmt.Errorf("policy: budget.maxPricePerHour %g must be positive and at most %g", b.MaxPricePerHour, float64(maxPrice))
	}
	if sc := p.SoftConstraints; sc != nil && !(sc.MaxPremiumPercent >= 0 && sc.MaxPremiumPercent <= MaxSoftPremiumPercent) {
		return fmt.Errorf("policy: softConstraints.maxPremiumPercent %g must be between 0 and %d", sc.MaxPremiumPercent, MaxSoftPremiumPercent)
	}
	if err := p.validatePools(); err != nil {
		return err
	}
	if err := p.validateMix(); err != nil {
		return err
	}
	if err := p.validateTeams(); err != nil {
		return err
	}
	workloads := map[string]int{}
	for i := range p.Forecasts {
		if err := validateForecast(&p.Forecasts[i]); err != nil {
			return fmt.Errorf("policy: forecasts[%d].%w", i, err)
		}
		key := ForecastWorkloadKey(p.Forecasts[i].Workload)
		if j, dup := workloads[key]; dup {
			return fmt.Errorf("policy: forecasts[%d].workload: %s is already forecast by forecasts[%d]", i, key, j)
		}
		workloads[key] = i
	}
	return nil
}

// validatePools checks every pool, its disruption settings and that names are unique.
func (p *CostPolicy) validatePools() error {
	names := map[string]bool{}
	for i := range p.Pools {
		if err := p.Pools[i].validate(); err != nil {
			return fmt.Errorf("policy: pools[%d]: %w", i, err)
		}
		if d := p.Pools[i].Disruption; d != nil {
			if err := d.validate(); err != nil {
				return fmt.Errorf("policy: pools[%d].disruption.%w", i, err)
			}
		}
		if names[p.Pools[i].Name] {
			return fmt.Errorf("policy: pools[%d].name %q is used twice", i, p.Pools[i].Name)
		}
		names[p.Pools[i].Name] = true
	}
	return nil
}

// validateForecast checks one workload forecast. The error is a *forecast.FieldError naming the
// first invalid field relative to the forecast (e.g. "loadQuery: must be set"), so that the caller
// can prefix the list index.
func validateForecast(f *forecast.WorkloadForecast) error {
	if err := f.Validate(); err != nil {
		var fe *forecast.FieldError
		if errors.As(err, &fe) {
			return fe // the first field; Validate joins one per invalid field
		}
		return &forecast.FieldError{Field: "workload", Message: err.Error()}
	}
	if len(f.Workload.Template) == 0 {
		return nil
	}
	t, err := ForecastTemplate(f.Workload)
	if err != nil {
		return &forecast.FieldError{Field: "workload.template", Message: err.Error()}
	}
	if t.Name == "" {
		return &forecast.FieldError{Field: "workload.template.metadata.name",
			Message: "must be set: it names the workload's expected pods, Events and metrics"}
	}
	if errs := validation.IsDNS1123Label(t.Name); len(errs) > 0 {
		return &forecast.FieldError{Field: "workload.template.metadata.name",
			Message: fmt.Sprintf("%q: %s (it names the workload's expected pods, Events and metrics)", t.Name, errs[0])}
	}
	if t.Namespace != "" {
		if errs := validation.IsDNS1123Label(t.Namespace); len(errs) > 0 {
			return &forecast.FieldError{Field: "workload.template.metadata.namespace", Message: fmt.Sprintf("%q: %s", t.Namespace, errs[0])}
		}
	}
	if len(t.Spec.Containers) == 0 {
		return &forecast.FieldError{Field: "workload.template.spec.containers", Message: "must list at least one container"}
	}
	// The reservation pods are planned like real ones: their requests must be countable.
	if err := snapshot.CheckPodSpec("spec", &t.Spec); err != nil {
		return &forecast.FieldError{Field: "workload.template", Message: err.Error()}
	}
	return nil
}

// ForecastTemplate strictly decodes the inline pod template of a forecast's workload (unknown
// fields fail, naming their path inside the template). Its namespace defaults to "default".
func ForecastTemplate(w forecast.WorkloadRef) (*corev1.PodTemplateSpec, error) {
	if len(w.Template) == 0 {
		return nil, errors.New("no inline template")
	}
	var t corev1.PodTemplateSpec
	if err := strictUnmarshal(w.Template, &t); err != nil {
		return nil, err
	}
	if t.Namespace == "" {
		t.Namespace = "default"
	}
	return &t, nil
}

// ForecastWorkloadKey names a forecast's workload uniquely: "Kind/namespace/name" for a reference,
// "template/namespace/name" for an inline template (from its metadata).
func ForecastWorkloadKey(w forecast.WorkloadRef) string {
	if len(w.Template) == 0 {
		return w.String()
	}
	var meta struct {
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	_ = yaml.Unmarshal(w.Template, &meta)
	ns := meta.Metadata.Namespace
	if ns == "" {
		ns = "default"
	}
	return "template/" + ns + "/" + meta.Metadata.Name
}

func (pl *Pool) validate() error {
	if errs := validation.IsDNS1123Label(pl.Name); len(errs) > 0 {
		return fmt.Errorf("name %q: %s", pl.Name, errs[0])
	}
	for i, f := range pl.InstanceFamilies {
		if !familyRE.MatchString(f) {
			return fmt.Errorf("instanceFamilies[%d] %q is not a family name", i, f)
		}
	}
	for i, c := range pl.CapacityTypes {
		if !c.Valid() {
			return fmt.Errorf("capacityTypes[%d] %q must be spot or on-demand", i, c)
		}
	}
	for k, v := range pl.Labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("labels: key %q: %s", k, errs[0])
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("labels[%s]: value %q: %s", k, v, errs[0])
		}
	}
	for i, t := range pl.Taints {
		if err := validateTaint(t); err != nil {
			return fmt.Errorf("taints[%d]: %w", i, err)
		}
	}
	if err := pl.Limits.validate(); err != nil {
		return fmt.Errorf("limits.%w", err)
	}
	if pl.MinNodes < 0 {
		return fmt.Errorf("minNodes must not be negative")
	}
	if m := pl.Limits.MaxNodes; m != nil && pl.MinNodes > *m {
		return fmt.Errorf("minNodes %d exceeds limits.maxNodes %d", pl.MinNodes, *m)
	}
	for i, r := range pl.Requirements {
		if err := validateRequirement(r); err != nil {
			return fmt.Errorf("requirements[%d]: %w", i, err)
		}
	}
	if pl.GPU != nil {
		if err := pl.GPU.validate(); err != nil {
			return fmt.Errorf("gpu.%w", err)
		}
	}
	return pl.validatePriorityTier()
}

// validatePriorityTier checks minPriority, maxPriority and priorityClassNames.
func (pl *Pool) validatePriorityTier() error {
	if lo, hi := pl.MinPriority, pl.MaxPriority; lo != nil && hi != nil && *lo > *hi {
		return fmt.Errorf("minPriority %d is above maxPriority %d: no pod could be bought for in the pool", *lo, *hi)
	}
	seen := map[string]bool{}
	for i, c := range pl.PriorityClassNames {
		if errs := validation.IsDNS1123Subdomain(c); len(errs) > 0 {
			return fmt.Errorf("priorityClassNames[%d] %q is not a PriorityClass name: %s", i, c, errs[0])
		}
		if seen[c] {
			return fmt.Errorf("priorityClassNames[%d] %q is listed twice", i, c)
		}
		seen[c] = true
	}
	return nil
}

func validateTaint(t corev1.Taint) error {
	if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
		return fmt.Errorf("key %q: %s", t.Key, errs[0])
	}
	switch t.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		return fmt.Errorf("effect %q must be NoSchedule, PreferNoSchedule or NoExecute", t.Effect)
	}
	return nil
}

func validateRequirement(r corev1.NodeSelectorRequirement) error {
	switch r.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(r.Values) == 0 {
			return fmt.Errorf("operator %s needs values", r.Operator)
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(r.Values) > 0 {
			return fmt.Errorf("operator %s takes no values", r.Operator)
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(r.Values) != 1 {
			return fmt.Errorf("operator %s takes one value", r.Operator)
		}
	default:
		return fmt.Errorf("operator %q is not In, NotIn, Exists, DoesNotExist, Gt or Lt", r.Operator)
	}
	return nil
}

func (l Limits) validate() error {
	neg := func(p *int) bool { return p != nil && *p < 0 }
	switch {
	case neg(l.MaxNodes):
		return fmt.Errorf("maxNodes must not be negative (omit it for no limit)")
	case neg(l.MaxVCPU):
		return fmt.Errorf("maxVCPU must not be negative (omit it for no limit)")
	case neg(l.MaxGPUs):
		return fmt.Errorf("maxGPUs must not be negative (omit it for no limit)")
	case l.MaxPricePerHour != nil && !(*l.MaxPricePerHour >= 0 && *l.MaxPricePerHour <= maxPrice):
		return fmt.Errorf("maxPricePerHour %g must be in 0..%g (omit it for no limit)", *l.MaxPricePerHour, float64(maxPrice))
	}
	return nil
}

// maxPrice bounds the $/h of a budget or a pool's limit: far above any fleet, and small enough
// that sums of prices stay exact to the cent.
const maxPrice = 1e9

func (g *GPUPolicy) validate() error {
	switch g.Sharing {
	case "", api.Exclusive, api.TimeSlicing, api.MPS, api.MIG, api.DynamicMIG:
	default:
		return fmt.Errorf("sharing %q must be exclusive, time-slicing, mps, mig or dynamic-mig", g.Sharing)
	}
	if g.Replicas < 0 || g.Replicas > 64 {
		return fmt.Errorf("replicas %d must be between 1 and 64", g.Replicas)
	}
	if g.Replicas > 1 && g.Sharing != api.TimeSlicing && g.Sharing != api.MPS {
		return fmt.Errorf("replicas needs sharing time-slicing or mps, not %q", g.Sharing)
	}
	switch g.MIGStrategy {
	case "", "single", "mixed":
	default:
		return fmt.Errorf("migStrategy %q must be single or mixed", g.MIGStrategy)
	}
	if (g.MIGStrategy != "" || len(g.MIGLayouts) > 0) && g.Sharing != api.MIG && g.Sharing != api.DynamicMIG {
		return fmt.Errorf("migStrategy and migLayouts need sharing mig or dynamic-mig, not %q", g.Sharing)
	}
	// The sharing modes whose GPUs the DRA driver may publish.
	draSharing := g.Sharing == "" || g.Sharing == api.Exclusive || g.Sharing == api.DynamicMIG
	if g.ConsumableMemory && !draSharing {
		return fmt.Errorf("consumableMemory needs sharing exclusive or dynamic-mig (GPUs the DRA driver publishes), not %q", g.Sharing)
	}
	switch g.Driver {
	case "":
	case DriverDRA:
		if !draSharing {
			return fmt.Errorf("driver dra needs sharing exclusive or dynamic-mig, not %q (the device plugin serves it)", g.Sharing)
		}
	case DriverDevicePlugin:
		if g.ConsumableMemory || g.Sharing == api.DynamicMIG {
			return fmt.Errorf("driver device-plugin cannot serve consumableMemory or dynamic-mig sharing: the DRA driver publishes those GPUs")
		}
	default:
		return fmt.Errorf("driver %q must be device-plugin or dra", g.Driver)
	}
	return nil
}

// AllowsCapacityType reports whether the pool may buy the capacity type.
func (pl *Pool) AllowsCapacityType(c api.CapacityType) bool {
	if len(pl.CapacityTypes) == 0 {
		return true
	}
	for _, x := range pl.CapacityTypes {
		if x == c {
			return true
		}
	}
	return false
}
