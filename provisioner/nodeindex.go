package provisioner

import (
	"context"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"

	"github.com/tiler-dev/tiler/cloudprovider"
)

// nodeIndex finds the Node of a launch record. A launch asks the cloud for the planned name, and
// the simulated cloud and GCE register the Node under it; an EKS node registers under its EC2
// private DNS name (ip-10-0-1-23.ec2.internal) instead, with spec.providerID naming the instance.
// So a record's Node is the one whose provider ID names the record's instance, else the one named
// as the record says. Built once per batch from the informer's Nodes.
type nodeIndex struct {
	byName map[string]*corev1.Node
	// byInstanceID indexes the Nodes by the instance ID of their spec.providerID
	// (cloudprovider.InstanceIDOfProviderID); Nodes without one are left out.
	byInstanceID map[string]*corev1.Node
}

func newNodeIndex(nodes []*corev1.Node) nodeIndex {
	x := nodeIndex{byName: make(map[string]*corev1.Node, len(nodes)), byInstanceID: make(map[string]*corev1.Node, len(nodes))}
	for _, n := range nodes {
		x.byName[n.Name] = n
		if id := cloudprovider.InstanceIDOfNode(n); id != "" {
			x.byInstanceID[id] = n
		}
	}
	return x
}

// forRecord returns the Node of the launch r, or nil when it has not registered (or the informer
// has not seen it yet). A Node of r's name whose provider ID names another instance is not r's:
// EC2 reuses private addresses, so a name r was relinked to may come back on a later instance.
func (x nodeIndex) forRecord(r LaunchRecord) *corev1.Node {
	if r.InstanceID != "" {
		if n := x.byInstanceID[r.InstanceID]; n != nil {
			return n
		}
	}
	n := x.byName[r.NodeName]
	if n == nil || r.InstanceID == "" {
		return n
	}
	if id := cloudprovider.InstanceIDOfNode(n); id != "" && id != r.InstanceID {
		return nil
	}
	return n
}

// nodeToDelete returns the name of the Node to delete with the launch r: its Node's; else r's
// node name when no Node has it (the Node may be registering as the informer lags, and deleting
// a Node that does not exist is harmless); else "", the name being another instance's Node.
func (x nodeIndex) nodeToDelete(r LaunchRecord) string {
	if n := x.forRecord(r); n != nil {
		return n.Name
	}
	if x.byName[r.NodeName] != nil {
		return ""
	}
	return r.NodeName
}

// relink returns recs with NodeName set to the name of each record's Node, and the records that
// changed (launch ID → node name): those whose Node registered under another name than the
// planned one.
func (x nodeIndex) relink(recs []LaunchRecord) ([]LaunchRecord, map[string]string) {
	var moved map[string]string
	out := make([]LaunchRecord, len(recs))
	for i, r := range recs {
		if n := x.forRecord(r); n != nil && n.Name != r.NodeName {
			if moved == nil {
				moved = map[string]string{}
			}
			moved[r.LaunchID] = n.Name
			r.NodeName = n.Name
		}
		out[i] = r
	}
	return out, moved
}

// relink records in the launch records the actual name of each Node that registered under
// another name than the planned one (launch ID → node name, nodeIndex.relink), once, so that every
// later lookup, Event, deletion and nomination uses it (LaunchID keeps the planned name, which
// launches are idempotent on). recs are the records as read. A failed write is logged; the next
// batch decides it again.
func (c *Controller) relink(ctx context.Context, log *zap.Logger, recs []LaunchRecord, moved map[string]string) {
	if len(moved) == 0 {
		return
	}
	for _, r := range recs {
		if name, ok := moved[r.LaunchID]; ok {
			log.Info("launch registered under another node name", zap.String(keyLaunchID, r.LaunchID),
				zap.String(keyInstanceID, r.InstanceID), zap.String(keyNode, name))
		}
	}
	if err := c.records.SetNodeNames(ctx, moved); err != nil {
		log.Error("recording the node names of launches", zap.Error(err))
	}
}
