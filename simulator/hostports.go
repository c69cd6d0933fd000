package simulator

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// hostPort is a port a pod binds on its node's network: kube-scheduler's NodePorts filter keeps
// two pods with the same protocol and port off one node unless both bind distinct host IPs.
type hostPort struct {
	ip       string // "0.0.0.0" when the pod binds every address
	protocol corev1.Protocol
	port     int32
}

// anyIP is the host IP of a port that binds every address; it conflicts with every IP.
const anyIP = "0.0.0.0"

// podHostPorts lists the host ports of the pod's containers and of its restartable init
// containers (sidecars, which run beside the containers); port 0 binds nothing. As the scheduler
// does, an empty host IP means every address and an empty protocol TCP.
func podHostPorts(p *corev1.Pod) []hostPort {
	var out []hostPort
	add := func(c *corev1.Container) {
		for _, cp := range c.Ports {
			if cp.HostPort <= 0 {
				continue
			}
			hp := hostPort{ip: cp.HostIP, protocol: cp.Protocol, port: cp.HostPort}
			if hp.ip == "" {
				hp.ip = anyIP
			}
			if hp.protocol == "" {
				hp.protocol = corev1.ProtocolTCP
			}
			out = append(out, hp)
		}
	}
	for i := range p.Spec.InitContainers {
		if c := &p.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range p.Spec.Containers {
		add(&p.Spec.Containers[i])
	}
	return out
}

// portSet counts the host ports bound on one node (a count, so that undoing a placement removes
// exactly what it added).
type portSet map[hostPort]int

// conflicts reports whether binding want clashes with a port in the set: same protocol and port,
// and the same IP or either one every address.
func (ps portSet) conflicts(want []hostPort) bool {
	for _, w := range want {
		for used, n := range ps {
			if n > 0 && used.protocol == w.protocol && used.port == w.port && (used.ip == w.ip || used.ip == anyIP || w.ip == anyIP) {
				return true
			}
		}
	}
	return false
}

// add counts ports into the set, which it creates when nil, and returns the set.
func (ps portSet) add(ports []hostPort, delta int) portSet {
	if len(ports) == 0 {
		return ps
	}
	if ps == nil {
		ps = portSet{}
	}
	for _, p := range ports {
		ps[p] += delta
		if ps[p] == 0 {
			delete(ps, p)
		}
	}
	return ps
}

// portsFree reports whether the pod's host ports are free on node n: not bound by its pods nor,
// on a new node, by the DaemonSet pods of every candidate (narrowPorts drops the others).
func (s *state) portsFree(pi *podInfo, n *simNode) bool {
	return len(pi.ports) == 0 || !n.ports.conflicts(pi.ports)
}

// offeringPortsFree reports whether the DaemonSet pods a node of o runs leave the pod's host
// ports free.
func offeringPortsFree(pi *podInfo, o *offering) bool {
	return len(pi.ports) == 0 || !o.dsPorts.conflicts(pi.ports)
}

// hostPortReason explains a pod whose host ports are what keeps it off every node: taken on
// every existing node and every new one it could share, and by DaemonSets on every offering.
func hostPortReason(pi *podInfo) string {
	if len(pi.ports) == 0 {
		return ""
	}
	var names []string
	for _, p := range pi.ports {
		names = append(names, fmt.Sprintf("%s %s:%d", p.protocol, p.ip, p.port))
	}
	sort.Strings(names)
	return "its host ports (" + strings.Join(names, ", ") + ") are bound on every node that could hold it"
}
