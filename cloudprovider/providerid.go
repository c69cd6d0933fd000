package cloudprovider

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// InstanceIDOfProviderID returns the ID the providers give the instance (Instance.ID) behind a
// Node whose spec.providerID is providerID, so that a launch is found by its instance where the
// Node registered under a name the cloud chose: an EKS node registers as its EC2 private DNS name
// (ip-10-0-1-23.ec2.internal), not as the planned name.
//
//   - aws:///<zone>/<instance-id> (the AWS cloud provider's form; also aws:///<instance-id> and
//     aws://<zone>/<instance-id>) gives the last segment, the EC2 instance ID;
//   - sim:///<zone>/<id> (sim.ProviderID) gives the last segment;
//   - gce://<project>/<zone>/<name> gives providerID itself: the GCP provider's instance IDs are
//     provider IDs (gcp.InstanceID).
//
// Another scheme gives providerID itself, for a provider whose IDs are provider IDs; "" gives "".
func InstanceIDOfProviderID(providerID string) string {
	scheme, rest, ok := strings.Cut(providerID, "://")
	if !ok {
		return providerID
	}
	switch scheme {
	case "aws", "sim":
		return rest[strings.LastIndexByte(rest, '/')+1:]
	}
	return providerID
}

// InstanceIDOfNode returns the ID of the instance behind the Node (InstanceIDOfProviderID of its
// spec.providerID), or "" when the Node has no provider ID yet (the cloud controller manager sets
// it after registration where the kubelet does not).
func InstanceIDOfNode(n *corev1.Node) string {
	return InstanceIDOfProviderID(n.Spec.ProviderID)
}
