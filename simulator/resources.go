package simulator

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tiler-dev/tiler/api/snapshot"
)

// vec is a resource vector over the simulation's dimensions: index 0 is CPU in milli-cores,
// 1 memory in bytes, 2 pods, then every extended resource a pending pod requests or an offering
// provides, in the order first seen (stable for one input, so plans stay deterministic).
type vec []int64

const (
	dimCPU = iota
	dimMemory
	dimPods
	numFixedDims
)

// dims maps resource names to vector indices.
type dims struct {
	names []corev1.ResourceName
	index map[corev1.ResourceName]int
}

func newDims() *dims {
	d := &dims{index: map[corev1.ResourceName]int{}}
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		d.add(n)
	}
	return d
}

// add registers a resource and returns its index.
func (d *dims) add(n corev1.ResourceName) int {
	if i, ok := d.index[n]; ok {
		return i
	}
	d.index[n] = len(d.names)
	d.names = append(d.names, n)
	return len(d.names) - 1
}

// tracked reports whether the simulation counts the resource. Ephemeral storage and hugepages are
// not modelled: new nodes' values are unknown before launch.
func tracked(n corev1.ResourceName) bool {
	switch {
	case n == corev1.ResourceEphemeralStorage, n == corev1.ResourceStorage:
		return false
	case len(n) > 9 && n[:9] == "hugepages":
		return false
	}
	return true
}

// fromList converts a ResourceList, registering unknown extended resources when register is set
// and dropping them otherwise.
func (d *dims) fromList(l corev1.ResourceList, register bool) vec {
	v := make(vec, len(d.names), len(d.names)+2)
	for n, q := range l {
		if !tracked(n) {
			continue
		}
		i, ok := d.index[n]
		if !ok {
			if !register {
				continue
			}
			i = d.add(n)
			v = append(v, make(vec, len(d.names)-len(v))...)
		}
		v[i] = countable(q, i == dimCPU)
	}
	return v
}

// countable is the quantity in the simulator's unit (milli for CPU), clamped to
// [0, snapshot.MaxQuantity]. The snapshot decoder rejects values outside it; the controller reads
// objects the API server admitted, which bounds no quantity from above, and MilliValue of 1e30 CPU
// is 0 — a pod that would fit any node. Clamped, it fits none; a negative value frees nothing.
func countable(q resource.Quantity, milli bool) int64 {
	if q.Sign() <= 0 {
		return 0
	}
	f := q.AsApproximateFloat64()
	if milli {
		f *= 1000
	}
	if !(f < snapshot.MaxQuantity) {
		return snapshot.MaxQuantity
	}
	if milli {
		return q.MilliValue()
	}
	return q.Value()
}

// grow pads v to the current number of dimensions.
func (d *dims) grow(v vec) vec {
	if len(v) < len(d.names) {
		v = append(v, make(vec, len(d.names)-len(v))...)
	}
	return v
}

// fits reports whether used+req ≤ alloc in every dimension.
func fits(used, req, alloc vec) bool {
	for i, r := range req {
		if r != 0 && used[i]+r > alloc[i] {
			return false
		}
	}
	return true
}

func (v vec) add(o vec) {
	for i, x := range o {
		v[i] += x
	}
}

func (v vec) sub(o vec) {
	for i, x := range o {
		v[i] -= x
	}
}

func (v vec) clone() vec { return append(vec(nil), v...) }

// firstShortfall names the first dimension where req exceeds alloc−used, for reasons.
func (d *dims) firstShortfall(used, req, alloc vec) (corev1.ResourceName, bool) {
	for i, r := range req {
		if r != 0 && used[i]+r > alloc[i] {
			return d.names[i], true
		}
	}
	return "", false
}
