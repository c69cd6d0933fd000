package simtest

import (
	"fmt"
	"sort"
	"time"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/snapshot"
	"github.com/tiler-dev/tiler/simulator/dra"
)

// Bind returns the snapshot after a purchase plan is carried out and the scheduler has bound
// every pod as planned: a Ready Node for every new node (its labels, taints and allocatable,
// created at created), every re-laid-out node with its new allocatable (and capacity) and
// nvidia.com/mig.config applied, every placed pod bound and running, and the DRA claims of the placed pods
// allocated on their nodes by the upstream allocator (a new GPU node publishes the slices
// dra.NodeSlices gives). Pods the plan leaves unschedulable stay pending. It fails when a pod's
// claims do not fit the node the plan put it on.
func Bind(snap *snapshot.Snapshot, plan *api.Plan, cat *catalog.Catalog, created time.Time) (*snapshot.Snapshot, error) {
	out := *snap
	out.Nodes = append([]*corev1.Node(nil), snap.Nodes...)
	out.ResourceSlices = append([]*resourcev1.ResourceSlice(nil), snap.ResourceSlices...)
	nodeOf := map[string]string{}
	nodes := map[string]*corev1.Node{}
	for _, n := range snap.Nodes {
		nodes[n.Name] = n
	}
	for _, r := range plan.Relayouts {
		for i, n := range out.Nodes {
			if n.Name == r.Node {
				cp := n.DeepCopy()
				cp.Status.Allocatable, cp.Status.Capacity = r.Allocatable, r.Allocatable.DeepCopy()
				cp.Labels[api.LabelMIGConfig] = r.MIGConfig
				cp.Labels[api.LabelMIGConfigState] = api.MIGConfigSuccess
				out.Nodes[i], nodes[n.Name] = cp, cp
			}
		}
	}
	for _, en := range plan.ExistingNodes {
		for _, p := range en.Pods {
			nodeOf[p] = en.Name
		}
	}
	for _, nn := range plan.NewNodes {
		n := newNodeObject(nn, created)
		out.Nodes = append(out.Nodes, n)
		nodes[n.Name] = n
		for _, p := range nn.Pods {
			nodeOf[p] = nn.Name
		}
		if it, ok := cat.Type(nn.InstanceType); ok && nn.GPU != nil {
			out.ResourceSlices = append(out.ResourceSlices, dra.NodeSlices(nn.Name, it, *nn.GPU)...)
		}
	}
	out.Pods = make([]*corev1.Pod, len(snap.Pods))
	var placed []*corev1.Pod
	for i, p := range snap.Pods {
		out.Pods[i] = p
		if node, ok := nodeOf[p.Namespace+"/"+p.Name]; ok && snapshot.IsPending(p) {
			cp := p.DeepCopy()
			cp.Spec.NodeName, cp.Status.Phase = node, corev1.PodRunning
			out.Pods[i] = cp
			placed = append(placed, cp)
		}
	}
	claims, err := allocateClaims(&out, placed, nodes)
	if err != nil {
		return nil, err
	}
	out.ResourceClaims = claims
	return &out, nil
}

// newNodeObject is the Node a new node of a plan registers as.
func newNodeObject(nn api.NewNode, created time.Time) *corev1.Node {
	n := &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}}
	n.Name = nn.Name
	n.CreationTimestamp = metav1.NewTime(created)
	n.Labels = map[string]string{}
	for k, v := range nn.Labels {
		n.Labels[k] = v
	}
	n.Spec.Taints = nn.Taints
	n.Status.Allocatable = nn.Allocatable.DeepCopy()
	n.Status.Capacity = n.Status.Allocatable
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	return n
}

// allocateClaims allocates the claims of the placed pods on their nodes, in pod order, next to
// the snapshot's allocations, and returns the snapshot's claims with those allocations (claims
// generated from templates are added, owned by their pod as the claim controller makes them).
func allocateClaims(snap *snapshot.Snapshot, placed []*corev1.Pod, nodes map[string]*corev1.Node) ([]*resourcev1.ResourceClaim, error) {
	out := append([]*resourcev1.ResourceClaim(nil), snap.ResourceClaims...)
	var users []*corev1.Pod
	for _, p := range placed {
		if len(p.Spec.ResourceClaims) > 0 {
			users = append(users, p)
		}
	}
	if len(users) == 0 {
		return out, nil
	}
	sort.Slice(users, func(i, j int) bool {
		return users[i].Namespace+"/"+users[i].Name < users[j].Namespace+"/"+users[j].Name
	})
	alloc, err := dra.NewAllocator(snap.DeviceClasses, snap.ResourceSlices, out)
	if err != nil {
		return nil, err
	}
	index := map[string]int{}
	for i, c := range out {
		index[c.Namespace+"/"+c.Name] = i
	}
	for _, p := range users {
		claims, err := dra.PodClaims(p, out, snap.ResourceClaimTemplates)
		if err != nil {
			return nil, err
		}
		results, reason, err := alloc.Fit(nodes[p.Spec.NodeName], nil, claims)
		switch {
		case err != nil:
			return nil, fmt.Errorf("pod %s/%s: claims on node %s: %w", p.Namespace, p.Name, p.Spec.NodeName, err)
		case reason != nil:
			return nil, fmt.Errorf("pod %s/%s: claims do not fit node %s: %s", p.Namespace, p.Name, p.Spec.NodeName, reason)
		}
		for i, c := range claims {
			key := c.Namespace + "/" + c.Name
			alloc.Commit(c, results[i])
			cp := c.DeepCopy()
			cp.Status.Allocation = results[i].DeepCopy()
			if j, ok := index[key]; ok {
				out[j] = cp
			} else {
				index[key] = len(out)
				out = append(out, cp)
			}
		}
	}
	return out, nil
}
