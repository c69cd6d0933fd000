package gcp

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tiler-dev/tiler/api"

	"github.com/tiler-dev/tiler/api/catalog"
)

// Machine is the shape of an instance type that the source prices.
type Machine struct {
	// Name is the catalog name, e.g. "a2-highgpu-1g" or "n1-standard-8+1xnvidia-tesla-t4".
	Name api.InstanceTypeName
	// Family is the machine family that selects the core and RAM SKUs, e.g. "a2", "n1".
	Family    string
	VCPU      int
	MemoryMiB int64
	// Accelerator is the GCE accelerator type, e.g. "nvidia-tesla-a100"; empty without GPUs.
	Accelerator      string
	AcceleratorCount int
}

// catalogAccelerators maps the catalog's GPU model names to GCE accelerator types, for catalogs
// whose type names do not carry the accelerator (A2, A3, G2 include their GPUs).
var catalogAccelerators = map[string]string{
	"A100-40GB":      "nvidia-tesla-a100",
	"A100-80GB":      "nvidia-a100-80gb",
	"H100-80GB":      "nvidia-h100-80gb",
	"H100-80GB-Mega": "nvidia-h100-mega-80gb",
	"L4":             "nvidia-l4",
	"T4":             "nvidia-tesla-t4",
	"V100":           "nvidia-tesla-v100",
}

// TypeName returns the catalog name of a machine type with attached accelerators, e.g.
// TypeName("n1-standard-8", "nvidia-tesla-t4", 1) = "n1-standard-8+1xnvidia-tesla-t4". Without
// accelerators (count 0) it is the machine type's name.
func TypeName(machineType, accelerator string, count int) api.InstanceTypeName {
	if count == 0 {
		return api.InstanceTypeName(machineType)
	}
	return api.InstanceTypeName(fmt.Sprintf("%s+%dx%s", machineType, count, accelerator))
}

// ParseTypeName splits a catalog name into the GCE machine type and the attached accelerator (empty
// and 0 when none is attached). It is the inverse of TypeName.
func ParseTypeName(name api.InstanceTypeName) (machineType, accelerator string, count int, err error) {
	machineType, attached, ok := strings.Cut(string(name), "+")
	if machineType == "" {
		return "", "", 0, fmt.Errorf("instance type %q: machine type is empty", name)
	}
	if !ok {
		return machineType, "", 0, nil
	}
	n, accelerator, ok := strings.Cut(attached, "x")
	count, convErr := strconv.Atoi(n)
	if !ok || convErr != nil || count < 1 || accelerator == "" {
		return "", "", 0, fmt.Errorf("instance type %q: attachment %q is not <count>x<accelerator-type>", name, attached)
	}
	return machineType, accelerator, count, nil
}

// Family returns the machine family of a GCE machine type: the part before the first dash.
func Family(machineType string) string {
	f, _, _ := strings.Cut(machineType, "-")
	return f
}

// MachinesFromCatalog returns the shapes of a catalog's types, so that the source can price an
// embedded catalog. The accelerator comes from the "+NxACCEL" name suffix, or else from the GPU
// model; an unknown model is an error naming the type.
func MachinesFromCatalog(cat *catalog.Catalog) ([]Machine, error) {
	var out []Machine
	for _, t := range cat.Types {
		machineType, acc, count, err := ParseTypeName(t.Name)
		if err != nil {
			return nil, err
		}
		if count == 0 && t.GPU.Count > 0 {
			a, ok := catalogAccelerators[t.GPU.Model]
			if !ok {
				return nil, fmt.Errorf("instance type %s: GPU model %q has no GCE accelerator type", t.Name, t.GPU.Model)
			}
			acc, count = a, t.GPU.Count
		}
		out = append(out, Machine{
			Name: t.Name, Family: Family(machineType), VCPU: t.VCPU, MemoryMiB: t.MemoryMiB,
			Accelerator: acc, AcceleratorCount: count,
		})
	}
	return out, nil
}
