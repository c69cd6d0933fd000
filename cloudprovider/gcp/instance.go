package gcp

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/tiler-dev/tiler/api"

	"cloud.google.com/go/compute/apiv1/computepb"

	"github.com/tiler-dev/tiler/cloudprovider"
	pricinggcp "github.com/tiler-dev/tiler/pricing/gcp"
)

// GCE label keys Tiler writes. GCE label keys and values allow only lowercase letters, digits,
// "_" and "-", so the cloudprovider.Tag* keys are spelled with dashes.
const (
	LabelLaunchID = "tiler-dev-launch-id"
	LabelCluster  = "tiler-dev-cluster"
	LabelPool     = "tiler-dev-pool"
)

// Instance metadata keys Tiler writes. Metadata values are free text, so the launch ID is kept
// exactly there; node labels, taints and the GPU configuration are for the bootstrap script.
const (
	MetadataLaunchID   = "tiler-launch-id"
	MetadataNodeLabels = "tiler-node-labels"
	MetadataNodeTaints = "tiler-node-taints"
	MetadataGPUConfig  = "tiler-gpu-config"
	// MetadataImage is the boot disk's source image as configured when the instance was
	// launched (Config.Image): the instance resource does not name its image, and an image
	// family resolves to another image later.
	MetadataImage = "tiler-image"
)

// Instance metadata the kubelet's bootstrap reads, the way GKE and the kube-up GCE scripts pass
// a node's labels and taints (see kubeletMetadata): kube-labels is the kubelet's --node-labels
// value (k=v,… of cloudprovider.KubeletLabels); kube-env is the YAML map of the node's
// environment, where NODE_LABELS and NODE_TAINTS become --node-labels and --register-with-taints
// (key=value:Effect,…). Tiler sets both keys of kube-env and keeps the others of a kube-env
// given in Config.Metadata.
const (
	MetadataKubeLabels = "kube-labels"
	MetadataKubeEnv    = "kube-env"
	KubeEnvNodeLabels  = "NODE_LABELS"
	KubeEnvNodeTaints  = "NODE_TAINTS"
)

// maxLabelValue is GCE's limit on a label value's length.
const maxLabelValue = 63

// LabelValue returns s as a valid GCE label value: s itself if it is one (lowercase letters,
// digits, "_", "-", at most 63 characters); otherwise s lowercased with other characters replaced
// by "-", cut to 54 characters, plus "-" and 8 hex digits of s's SHA-256, so that two different
// IDs do not share a label value.
func LabelValue(s string) string {
	valid := len(s) <= maxLabelValue
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r - 'A' + 'a')
			valid = false
		default:
			b.WriteRune('-')
			valid = false
		}
	}
	if valid {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	out := b.String()
	return out[:min(len(out), maxLabelValue-9)] + "-" + hex.EncodeToString(sum[:4])
}

// InstanceID returns the ID of an instance: its Kubernetes provider ID, gce://project/zone/name,
// which is also Node.spec.providerID of the node it becomes.
func InstanceID(project, zone, name string) string {
	return fmt.Sprintf("gce://%s/%s/%s", project, zone, name)
}

// ParseInstanceID splits an InstanceID. A malformed ID is an error naming it.
func ParseInstanceID(id string) (project, zone, name string, err error) {
	parts := strings.Split(strings.TrimPrefix(id, "gce://"), "/")
	if !strings.HasPrefix(id, "gce://") || len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", "", fmt.Errorf("instance ID %q is not gce://<project>/<zone>/<name>", id)
	}
	return parts[0], parts[1], parts[2], nil
}

// instanceStates normalises GCE statuses to the provider-neutral states.
var instanceStates = map[string]string{
	"PROVISIONING": cloudprovider.StatePending, "STAGING": cloudprovider.StatePending, "REPAIRING": cloudprovider.StatePending,
	"RUNNING":  cloudprovider.StateRunning,
	"STOPPING": cloudprovider.StateTerminating, "SUSPENDING": cloudprovider.StateTerminating,
	"TERMINATED": cloudprovider.StateTerminated, "SUSPENDED": cloudprovider.StateTerminated,
}

func isSpot(s *computepb.Scheduling) bool {
	return s.GetProvisioningModel() == "SPOT" || s.GetPreemptible()
}

// toInstance converts an API instance. The price comes from the catalog, if it has the offering.
func (p *Provider) toInstance(inst *computepb.Instance) *cloudprovider.Instance {
	zone := path.Base(inst.GetZone())
	ref := api.Offering{InstanceType: instanceType(inst), Zone: zone, CapacityType: api.OnDemand}
	if isSpot(inst.GetScheduling()) {
		ref.CapacityType = api.Spot
	}
	meta := metadataMap(inst.GetMetadata())
	labels := inst.GetLabels()
	out := &cloudprovider.Instance{
		ID:           InstanceID(p.cfg.Project, zone, inst.GetName()),
		LaunchID:     meta[MetadataLaunchID],
		NodeName:     inst.GetName(),
		Pool:         labels[LabelPool],
		Offering:     ref,
		State:        instanceStates[inst.GetStatus()],
		PricePerHour: p.price(ref),
		Tags:         map[string]string{api.TagNodeName: inst.GetName()},
		Image:        meta[MetadataImage],
		Settings:     meta[MetadataLaunchSettings],
		// The reservation the VM consumes, by name: a reservation of the launch's (launchReserved),
		// or another that took a VM inserted with the default ANY_RESERVATION affinity.
		CapacityReservation: consumedReservation(inst),
	}
	if out.LaunchID == "" {
		out.LaunchID = labels[LabelLaunchID]
	}
	if out.State == "" {
		out.State = cloudprovider.StatePending
	}
	out.LaunchedAt, _ = time.Parse(time.RFC3339, inst.GetCreationTimestamp())
	for k, v := range labels {
		out.Tags[k] = v
	}
	out.Tags[api.TagLaunchID] = out.LaunchID
	out.Tags[api.TagCluster] = labels[LabelCluster]
	out.Tags[api.TagPool] = out.Pool
	return out
}

// instanceType is the catalog name of an instance: its machine type, plus attached GPUs.
func instanceType(inst *computepb.Instance) api.InstanceTypeName {
	return typeName(inst.GetMachineType(), inst.GetGuestAccelerators())
}

// typeName is the catalog name of a machine type (a name or URL) with attached accelerators.
func typeName(machineType string, accs []*computepb.AcceleratorConfig) api.InstanceTypeName {
	mt := path.Base(machineType)
	for _, acc := range accs {
		return pricinggcp.TypeName(mt, path.Base(acc.GetAcceleratorType()), int(acc.GetAcceleratorCount()))
	}
	return api.InstanceTypeName(mt)
}

func metadataMap(m *computepb.Metadata) map[string]string {
	out := map[string]string{}
	for _, it := range m.GetItems() {
		out[it.GetKey()] = it.GetValue()
	}
	return out
}

func (p *Provider) price(ref api.Offering) float64 {
	cat := p.catalog.Load()
	if cat == nil {
		return 0
	}
	price, _ := cat.Price(ref)
	return price
}
