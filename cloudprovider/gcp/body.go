package gcp

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/tiler-dev/tiler/api"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/tiler-dev/tiler/cloudprovider"
	pricinggcp "github.com/tiler-dev/tiler/pricing/gcp"
)

// acceleratorFamilies are the machine families with built-in GPUs (A2, A3, G2 and newer).
var acceleratorFamilies = map[string]bool{"a2": true, "a3": true, "a4": true, "g2": true, "g4": true}

// instanceFor builds the body of instances.insert for one offering, booting image. Names and URLs
// are relative to the project, as the API accepts them (instances.insert.request.spot.json).
func (p *Provider) instanceFor(req cloudprovider.LaunchRequest, off api.Offering, image string) (*computepb.Instance, error) {
	machineType, acc, count, err := pricinggcp.ParseTypeName(off.InstanceType)
	if err != nil {
		return nil, err
	}
	meta, err := p.metadata(req, off, image)
	if err != nil {
		return nil, err
	}
	inst := &computepb.Instance{
		Name:              proto.String(req.NodeName),
		MachineType:       proto.String(fmt.Sprintf("zones/%s/machineTypes/%s", off.Zone, machineType)),
		Scheduling:        p.scheduling(off, count > 0 || p.hasGPUs(off, machineType)),
		Disks:             []*computepb.AttachedDisk{p.bootDisk(off.Zone, image)},
		NetworkInterfaces: []*computepb.NetworkInterface{p.networkInterface()},
		Labels:            p.labels(req),
		Metadata:          meta,
	}
	if count > 0 {
		inst.GuestAccelerators = []*computepb.AcceleratorConfig{{
			AcceleratorType:  proto.String(fmt.Sprintf("zones/%s/acceleratorTypes/%s", off.Zone, acc)),
			AcceleratorCount: proto.Int32(int32(count)),
		}}
	}
	if p.cfg.ServiceAccount != "" {
		scopes := p.cfg.Scopes
		if len(scopes) == 0 {
			scopes = []string{"https://www.googleapis.com/auth/cloud-platform"}
		}
		inst.ServiceAccounts = []*computepb.ServiceAccount{{Email: proto.String(p.cfg.ServiceAccount), Scopes: scopes}}
	}
	return inst, nil
}

// hasGPUs reports whether the offering's type has built-in GPUs: from the catalog if it has the
// type, else from the machine family.
func (p *Provider) hasGPUs(off api.Offering, machineType string) bool {
	if cat := p.catalog.Load(); cat != nil {
		if t, ok := cat.Type(off.InstanceType); ok {
			return t.GPU.Count > 0
		}
	}
	return acceleratorFamilies[pricinggcp.Family(machineType)]
}

// scheduling: spot VMs are SPOT, never restart, and are deleted or stopped on preemption as
// configured; VMs with GPUs cannot live-migrate, so host maintenance terminates them (and
// standard ones restart afterwards).
func (p *Provider) scheduling(off api.Offering, gpus bool) *computepb.Scheduling {
	if off.CapacityType == api.Spot {
		return &computepb.Scheduling{
			ProvisioningModel:         proto.String("SPOT"),
			InstanceTerminationAction: proto.String(p.cfg.SpotTerminationAction),
			OnHostMaintenance:         proto.String("TERMINATE"),
			AutomaticRestart:          proto.Bool(false),
		}
	}
	s := &computepb.Scheduling{ProvisioningModel: proto.String("STANDARD"), OnHostMaintenance: proto.String("MIGRATE"), AutomaticRestart: proto.Bool(true)}
	if gpus {
		s.OnHostMaintenance = proto.String("TERMINATE")
	}
	return s
}

func (p *Provider) bootDisk(zone, image string) *computepb.AttachedDisk {
	return &computepb.AttachedDisk{
		Boot: proto.Bool(true), AutoDelete: proto.Bool(true),
		InitializeParams: &computepb.AttachedDiskInitializeParams{
			SourceImage: proto.String(image),
			DiskSizeGb:  proto.Int64(p.cfg.DiskSizeGB),
			DiskType:    proto.String(fmt.Sprintf("zones/%s/diskTypes/%s", zone, p.cfg.DiskType)),
		},
	}
}

func (p *Provider) networkInterface() *computepb.NetworkInterface {
	ni := &computepb.NetworkInterface{Network: proto.String(p.cfg.Network)}
	if p.cfg.Subnetwork != "" {
		ni.Subnetwork = proto.String(p.cfg.Subnetwork)
	}
	return ni
}

// labels are the GCE labels: cluster, pool and launch ID, as valid label values (LabelValue).
func (p *Provider) labels(req cloudprovider.LaunchRequest) map[string]string {
	l := map[string]string{LabelCluster: LabelValue(p.cfg.ClusterName), LabelLaunchID: LabelValue(req.LaunchID)}
	if req.Pool != "" {
		l[LabelPool] = LabelValue(req.Pool)
	}
	return l
}

// metadata is the configured metadata plus Tiler's: the exact launch ID, and the node's labels,
// taints and GPU configuration for the bootstrap script (labels as k=v,…; taints as
// key=value:Effect,…; GPU as JSON), and the kubelet's labels and taints in kube-labels and
// kube-env (kubeletMetadata). Keys are sorted so that the body is deterministic. The
// instance-type labels are those of the offering tried (cloudprovider.InstanceTypeLabels), not
// of the request's: a fallback may be another shape, and a catalog name with an attached
// accelerator (n1-standard-4+1xnvidia-tesla-t4) is not a label value.
func (p *Provider) metadata(req cloudprovider.LaunchRequest, off api.Offering, image string) (*computepb.Metadata, error) {
	gpu, err := json.Marshal(req.GPU)
	if err != nil {
		return nil, fmt.Errorf("gcp: encoding the GPU configuration: %w", err)
	}
	kv := map[string]string{MetadataLaunchID: req.LaunchID, MetadataGPUConfig: string(gpu), MetadataImage: image,
		MetadataLaunchSettings: p.settings}
	for k, v := range p.cfg.Metadata {
		kv[k] = v
	}
	var labels, taints []string
	nodeLabels := cloudprovider.WithInstanceTypeLabels(req.LabelsFor(off), off.InstanceType)
	for k, v := range nodeLabels {
		labels = append(labels, k+"="+v)
	}
	for _, t := range req.Taints {
		taints = append(taints, fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect))
	}
	sort.Strings(labels)
	sort.Strings(taints)
	kv[MetadataNodeLabels], kv[MetadataNodeTaints] = strings.Join(labels, ","), strings.Join(taints, ",")
	if err := kubeletMetadata(kv, cloudprovider.KubeletLabels(nodeLabels, req.GPU), req.Taints); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	md := &computepb.Metadata{}
	for _, k := range keys {
		md.Items = append(md.Items, &computepb.Items{Key: proto.String(k), Value: proto.String(kv[k])})
	}
	return md, nil
}

// kubeletMetadata sets the kube-labels and kube-env items of the metadata kv to the node's kubelet
// labels and taints (see MetadataKubeEnv), keeping the other keys of a kube-env already in kv.
func kubeletMetadata(kv map[string]string, labels map[string]string, taints []corev1.Taint) error {
	env := map[string]any{}
	if base := kv[MetadataKubeEnv]; base != "" {
		if err := yaml.Unmarshal([]byte(base), &env); err != nil {
			return fmt.Errorf("gcp: metadata %s is not a YAML map: %w", MetadataKubeEnv, err)
		}
	}
	env[KubeEnvNodeLabels] = cloudprovider.LabelsFlag(labels)
	env[KubeEnvNodeTaints] = cloudprovider.TaintsFlag(taints)
	b, err := yaml.Marshal(env)
	if err != nil {
		return fmt.Errorf("gcp: encoding %s: %w", MetadataKubeEnv, err)
	}
	kv[MetadataKubeLabels], kv[MetadataKubeEnv] = cloudprovider.LabelsFlag(labels), string(b)
	return nil
}
