// Package aws is Tiler's EC2 cloud provider: catalog discovery with live prices, launching with
// instant EC2 Fleets, listing and terminating the cluster's instances, and interruption notices
// from the SQS queue that EventBridge feeds.
//
// Launch: Create turns the request's offering and fallbacks into one CreateFleet call of type
// instant per capacity type (spot first when the preferred offering is spot), with one override
// per acceptable (type, zone) using the zone's subnet from Config.Subnets. Spot fleets use the
// price-capacity-optimized allocation strategy and on-demand fleets lowest-price. The client
// token is derived from the launch ID, and before any CreateFleet the instances tagged with the
// launch ID are looked up, so Create is idempotent on the launch ID. EC2 answers an instant fleet
// with HTTP 200 and a per-pool errorSet: capacity codes become an *InsufficientCapacityError
// naming each unavailable offering, account limits a *QuotaError, and every offering unavailable
// for either reason goes into the cloudprovider.UnavailableOfferings cache, also when another pool
// did launch (partial success). CreateReportingUnavailable (cloudprovider.UnavailableReporter)
// hands those offerings to the controller with the launched instance, so that its next plan
// avoids them too.
//
// Bootstrap: with Config.Bootstrap, Tiler manages the launch templates. Each offering of a
// launch gets the template of its bootstrap configuration, tiler-<pool>-<hash> (16 hex digits of
// SHA-256 over the template's AMI, instance profile, security groups and user data), ensured
// idempotently by name (DescribeLaunchTemplates, then CreateLaunchTemplate; AlreadyExists from a
// concurrent replica is success) and remembered, and CreateFleet lists one launch template
// config per template with its overrides. The user data is a MIME multi-part document with an
// EKS Amazon Linux 2023 nodeadm NodeConfig (node.eks.aws/v1alpha1): spec.cluster from
// NodeBootstrap, and spec.kubelet.flags --node-labels (cloudprovider.KubeletLabels: the planned
// labels less those the kubelet and the cloud set, plus nvidia.com/mig.config or
// nvidia.com/device-plugin.config for the GPU configuration) and --register-with-taints. Without
// it, a launch template of your own (LaunchTemplateID or LaunchTemplateName) boots the node and
// reads its pool and GPU configuration from the instance tags.
//
// Catalog: DiscoverTypes reads DescribeInstanceTypes and DescribeInstanceTypeOfferings (both
// paginated), maps NVIDIA GPUs to the catalog's model names, records Neuron and other non-NVIDIA
// accelerators in TypeInfo.Accelerator, and BuildCatalog merges prices from a pricing.Source.
//
// Every AWS client is behind a small interface (EC2API, SQSAPI) so that tests point the real SDK
// clients at awstest and decorators (metrics, logging) can wrap them; the Provider itself is
// wrapped through cloudprovider.Provider.
package aws
