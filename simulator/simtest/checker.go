package simtest

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/tiler-dev/tiler/api/snapshot"
)

// Check is an independent, deliberately simple checker of a plan: it rebuilds every node (existing
// ones from the snapshot, new ones from the plan) with all its pods and verifies, by brute force
// over pods and nodes, that every pending pod is placed once or reported, and that resources,
// host ports, node selectors, node affinity, taints, required pod (anti-)affinity and hard
// topology spread hold. It shares no code with the simulator beyond the Kubernetes helpers. It returns the
// violations found.
func Check(snap *snapshot.Snapshot, plan *api.Plan) []string {
	c := &checker{snap: snap, plan: plan, pods: map[string]*corev1.Pod{}, nodeOf: map[string]string{}}
	return c.run()
}

type checker struct {
	snap   *snapshot.Snapshot
	plan   *api.Plan
	pods   map[string]*corev1.Pod
	nodes  []*corev1.Node
	nodeOf map[string]string // pod key → node name (bound and planned)
	errs   []string
}

func (c *checker) errorf(f string, a ...any) { c.errs = append(c.errs, fmt.Sprintf(f, a...)) }

func (c *checker) run() []string {
	c.collect()
	for _, n := range c.nodes {
		c.checkNode(n)
	}
	for key, node := range c.nodeOf {
		p := c.pods[key]
		if p.Spec.NodeName != "" {
			continue // bound pods are the cluster's business
		}
		n := c.node(node)
		c.checkSelection(p, n)
		c.checkPodAffinity(p, n)
		c.checkSpread(p, n)
	}
	sort.Strings(c.errs)
	return c.errs
}

func (c *checker) collect() {
	for _, p := range c.snap.Pods {
		key := p.Namespace + "/" + p.Name
		c.pods[key] = p
		if snapshot.IsActive(p) {
			c.nodeOf[key] = p.Spec.NodeName
		}
	}
	c.nodes = append(c.nodes, c.snap.Nodes...)
	c.relayouts()
	seen := map[string]bool{}
	placePods := func(node string, pods []string) {
		for _, k := range pods {
			if seen[k] {
				c.errorf("pod %s is placed twice", k)
			}
			seen[k] = true
			if _, ok := c.pods[k]; !ok {
				c.errorf("plan places unknown pod %s", k)
				continue
			}
			c.nodeOf[k] = node
		}
	}
	for _, n := range c.plan.ExistingNodes {
		placePods(n.Name, n.Pods)
	}
	for _, nn := range c.plan.NewNodes {
		node := &corev1.Node{}
		node.Name, node.Labels, node.Spec.Taints = nn.Name, nn.Labels, nn.Taints
		node.Status.Allocatable = nn.Allocatable
		c.nodes = append(c.nodes, node)
		placePods(nn.Name, nn.Pods)
	}
	for _, u := range c.plan.Unschedulable {
		if seen[u.Pod] {
			c.errorf("pod %s is both placed and unschedulable", u.Pod)
		}
		seen[u.Pod] = true
	}
	for key, p := range c.pods {
		if snapshot.IsPending(p) && !seen[key] {
			c.errorf("pending pod %s is neither placed nor reported", key)
		}
	}
}

// relayouts gives each re-laid-out node its new allocatable and checks that only idle GPUs
// change: the MIG slices the node's running pods use fit on the GPUs the re-layout keeps, as its
// Layout lists them.
func (c *checker) relayouts() {
	for _, r := range c.plan.Relayouts {
		i := -1
		for j, n := range c.nodes {
			if n.Name == r.Node {
				i = j
			}
		}
		if i < 0 {
			c.errorf("relayout of unknown node %s", r.Node)
			continue
		}
		changed := map[int]bool{}
		for _, g := range r.GPUs {
			if g < 0 || g >= len(r.Layout) {
				c.errorf("relayout of node %s: GPU %d of %d", r.Node, g, len(r.Layout))
			}
			changed[g] = true
		}
		kept := map[corev1.ResourceName]int64{}
		for g, profiles := range r.Layout {
			if !changed[g] {
				for _, p := range profiles {
					kept[corev1.ResourceName("nvidia.com/mig-"+p)]++
				}
			}
		}
		used := map[corev1.ResourceName]int64{}
		for _, p := range c.snap.Pods {
			if p.Spec.NodeName != r.Node || !snapshot.IsActive(p) {
				continue
			}
			for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
				if strings.HasPrefix(string(name), "nvidia.com/mig-") {
					used[name] += q.Value()
				}
			}
		}
		for name, k := range used {
			if k > kept[name] {
				c.errorf("relayout of node %s: its pods use %d %s, the GPUs it keeps have %d", r.Node, k, name, kept[name])
			}
		}
		n := c.nodes[i].DeepCopy()
		n.Status.Allocatable = r.Allocatable
		c.nodes[i] = n
	}
}

func (c *checker) node(name string) *corev1.Node {
	for _, n := range c.nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// checkNode sums the requests of all pods on the node, plus DaemonSet pods on new nodes.
func (c *checker) checkNode(n *corev1.Node) {
	used := corev1.ResourceList{}
	count := 0
	var ports []corev1.ContainerPort
	add := func(p *corev1.Pod) {
		count++
		for _, ct := range p.Spec.Containers {
			for _, cp := range ct.Ports {
				if cp.HostPort <= 0 {
					continue
				}
				for _, other := range ports {
					if portsClash(cp, other) {
						c.errorf("node %s: host port %s %s:%d is bound twice", n.Name, cp.Protocol, cp.HostIP, cp.HostPort)
					}
				}
				ports = append(ports, cp)
			}
		}
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			v := used[name]
			v.Add(q)
			used[name] = v
		}
	}
	for key, node := range c.nodeOf {
		if node == n.Name {
			add(c.pods[key])
		}
	}
	if n.Labels[api.LabelPool] != "" && c.isNew(n.Name) {
		for _, ds := range c.snap.DaemonSets {
			p := &corev1.Pod{Spec: ds.Spec.Template.Spec}
			if matches(p, n) {
				add(p)
			}
		}
	}
	for name, q := range used {
		if name == corev1.ResourceEphemeralStorage {
			continue
		}
		a, ok := n.Status.Allocatable[name]
		if !ok && c.draServed(name) {
			continue // DRA devices serve it where the node does not advertise it (claims are checked apart)
		}
		if !ok && !q.IsZero() || ok && q.Cmp(a) > 0 {
			c.errorf("node %s: %s requested %s > allocatable %s", n.Name, name, q.String(), a.String())
		}
	}
	if maxPods, ok := n.Status.Allocatable[corev1.ResourcePods]; ok && int64(count) > maxPods.Value() {
		c.errorf("node %s: %d pods > %d", n.Name, count, maxPods.Value())
	}
}

// draServed reports whether a DeviceClass serves the extended resource (its
// extendedResourceName, or the implicit deviceclass.resource.kubernetes.io/<class> name).
func (c *checker) draServed(name corev1.ResourceName) bool {
	for _, dc := range c.snap.DeviceClasses {
		if dc.Spec.ExtendedResourceName != nil && corev1.ResourceName(*dc.Spec.ExtendedResourceName) == name ||
			name == corev1.ResourceName("deviceclass.resource.kubernetes.io/"+dc.Name) {
			return true
		}
	}
	return false
}

func (c *checker) isNew(name string) bool {
	for _, nn := range c.plan.NewNodes {
		if nn.Name == name {
			return true
		}
	}
	return false
}

func matches(p *corev1.Pod, n *corev1.Node) bool {
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(p).Match(n); !ok {
		return false
	}
	// A reservation taint is tolerated by every pod the plan puts there (the controller adds it).
	_, bad := v1helper.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Key != api.TaintReserved && (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute)
	}, true)
	return !bad
}

func (c *checker) checkSelection(p *corev1.Pod, n *corev1.Node) {
	if !matches(p, n) {
		c.errorf("pod %s/%s: node %s fails its node selector, affinity or taints", p.Namespace, p.Name, n.Name)
	}
}

// podsIn lists the pods (other than self) in the same domain of key as node n that the selector
// matches in the namespaces.
func (c *checker) podsIn(n *corev1.Node, key string, sel *metav1.LabelSelector, ns map[string]bool, self string) int {
	v, ok := n.Labels[key]
	if !ok {
		return 0
	}
	s, _ := metav1.LabelSelectorAsSelector(sel)
	count := 0
	for k, node := range c.nodeOf {
		if k == self {
			continue
		}
		other := c.node(node)
		p := c.pods[k]
		if other == nil || other.Labels[key] != v || ns != nil && !ns[p.Namespace] {
			continue
		}
		if s.Matches(labels.Set(p.Labels)) {
			count++
		}
	}
	return count
}

func (c *checker) checkPodAffinity(p *corev1.Pod, n *corev1.Node) {
	key := p.Namespace + "/" + p.Name
	a := p.Spec.Affinity
	if a != nil && a.PodAntiAffinity != nil {
		for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if c.podsIn(n, t.TopologyKey, t.LabelSelector, map[string]bool{p.Namespace: true}, key) > 0 {
				c.errorf("pod %s: anti-affinity (%s) violated on node %s", key, t.TopologyKey, n.Name)
			}
		}
	}
	if a != nil && a.PodAffinity != nil {
		for _, t := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			s, _ := metav1.LabelSelectorAsSelector(t.LabelSelector)
			if c.podsIn(n, t.TopologyKey, t.LabelSelector, map[string]bool{p.Namespace: true}, key) == 0 && !s.Matches(labels.Set(p.Labels)) {
				c.errorf("pod %s: affinity (%s) unmet on node %s", key, t.TopologyKey, n.Name)
			}
		}
	}
}

// checkSpread verifies hard spread constraints on the final placement: in the pod's domain the
// count of matching pods may exceed the smallest count among the domains of nodes the pod could
// use by at most maxSkew (hostname domains include an empty new node, so their minimum is 0).
func (c *checker) checkSpread(p *corev1.Pod, n *corev1.Node) {
	key := p.Namespace + "/" + p.Name
	for _, sc := range p.Spec.TopologySpreadConstraints {
		if sc.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		ns := map[string]bool{p.Namespace: true}
		here := c.podsIn(n, sc.TopologyKey, sc.LabelSelector, ns, "")
		minimum := 0
		if sc.TopologyKey != corev1.LabelHostname {
			minimum = -1
			for _, d := range c.domains(p, sc.TopologyKey) {
				cnt := c.podsIn(d, sc.TopologyKey, sc.LabelSelector, ns, "")
				if minimum < 0 || cnt < minimum {
					minimum = cnt
				}
			}
		}
		// The last pod placed made the count; allow the skew the filter allowed at that time.
		if here-minimum > int(sc.MaxSkew) {
			c.errorf("pod %s: spread over %s has skew %d > %d on node %s", key, sc.TopologyKey, here-minimum, sc.MaxSkew, n.Name)
		}
	}
}

// domains returns one node per value of key among the nodes the pod may use.
func (c *checker) domains(p *corev1.Pod, key string) []*corev1.Node {
	seen := map[string]bool{}
	var out []*corev1.Node
	for _, n := range c.nodes {
		if v, ok := n.Labels[key]; ok && !seen[v] && matches(p, n) {
			seen[v] = true
			out = append(out, n)
		}
	}
	return out
}

// portsClash is kube-scheduler's NodePorts rule: same port and protocol (TCP when empty), and the
// same host IP or either one every address (empty or 0.0.0.0).
func portsClash(a, b corev1.ContainerPort) bool {
	proto := func(p corev1.ContainerPort) corev1.Protocol {
		if p.Protocol == "" {
			return corev1.ProtocolTCP
		}
		return p.Protocol
	}
	every := func(p corev1.ContainerPort) bool { return p.HostIP == "" || p.HostIP == "0.0.0.0" }
	return a.HostPort == b.HostPort && proto(a) == proto(b) && (a.HostIP == b.HostIP || every(a) || every(b))
}
