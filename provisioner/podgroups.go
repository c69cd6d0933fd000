package provisioner

import (
	"go.uber.org/zap"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// podGroupResource is the native gang API (KEP-4671, gate GenericWorkload): served only when the
// gate and the beta API are on.
const podGroupResource = "podgroups"

// watchPodGroups registers the PodGroup informer when the API server serves
// scheduling.k8s.io/v1beta1 podgroups (discovery), before the factory starts; without the API,
// clusters keep working and native gangs are simply absent from the snapshot. Called by Start.
func (c *Controller) watchPodGroups() {
	gv := schedulingv1beta1.SchemeGroupVersion.String()
	served, err := podGroupsServed(c.kube)
	if err != nil {
		c.log.Warn("discovering the PodGroup API; native gangs are not read", zap.String("groupVersion", gv), zap.Error(err))
		return
	}
	if !served {
		c.log.Info("PodGroup API not served (gate GenericWorkload off): native gangs are not read", zap.String("groupVersion", gv))
		return
	}
	inf := c.factory.Scheduling().V1beta1().PodGroups().Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.poke() },
		UpdateFunc: func(any, any) { c.poke() },
		DeleteFunc: func(any) { c.poke() },
	})
	c.podGroups = inf
}

// podGroupsServed reports whether the API server serves the native gang API (discovery).
func podGroupsServed(kube kubernetes.Interface) (bool, error) {
	return servesResource(kube.Discovery().ServerResourcesForGroupVersion, schedulingv1beta1.SchemeGroupVersion.String(), podGroupResource)
}

// servesResource reports whether the group version lists the resource; a group version the
// server does not know is "not served", not an error.
func servesResource(list func(string) (*metav1.APIResourceList, error), groupVersion, resource string) (bool, error) {
	rl, err := list(groupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range rl.APIResources {
		if r.Name == resource {
			return true, nil
		}
	}
	return false, nil
}
