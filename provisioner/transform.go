package provisioner

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// stripManagedFields is the informers' transform (cache.TransformFunc): it drops
// metadata.managedFields, the server-side apply bookkeeping no batch reads, from every object
// before it is cached — a third or more of a pod's or a node's memory in a real cluster. The
// informer owns the object when the transform runs. Writes are unaffected: the controller
// patches, or updates objects it has just read from the API server (an update whose
// managedFields is empty leaves the server's unchanged anyway). Tombstones pass as they are.
func stripManagedFields(obj any) (any, error) {
	if acc, err := meta.Accessor(obj); err == nil && acc.GetManagedFields() != nil {
		acc.SetManagedFields(nil)
	}
	return obj, nil
}

var _ cache.TransformFunc = stripManagedFields
