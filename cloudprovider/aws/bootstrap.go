package aws

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"mime/multipart"
	"net"
	"net/textproto"
	"net/url"
	"strings"

	"github.com/tiler-dev/tiler/api"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/tiler-dev/tiler/cloudprovider"
)

// NodeBootstrap is what a node needs to join the EKS cluster. When Config.Bootstrap is set, Tiler
// manages the launch templates: one per pool and bootstrap configuration (see templateName),
// whose user data is an Amazon Linux 2023 nodeadm NodeConfig with the cluster's coordinates and
// the kubelet flags that register the node with its planned labels and taints. The values come
// from `aws eks describe-cluster --name <cluster>`.
type NodeBootstrap struct {
	// ClusterName is the EKS cluster's name (NodeConfig spec.cluster.name); default
	// Config.ClusterName.
	ClusterName string
	// APIServerEndpoint is the cluster's API server URL (cluster.endpoint).
	APIServerEndpoint string
	// CertificateAuthority is the base64-encoded CA bundle of the API server
	// (cluster.certificateAuthority.data).
	CertificateAuthority string
	// ServiceCIDR is the cluster's service CIDR (cluster.kubernetesNetworkConfig.serviceIpv4Cidr),
	// from which nodeadm derives the cluster DNS address.
	ServiceCIDR string
	// ImageID is the AMI of nodes without GPUs: an EKS-optimized Amazon Linux 2023 AMI, whose
	// nodeadm reads the NodeConfig from the user data; an AMI ID, or an SSM parameter holding one
	// (SSMImagePrefix), read again every Config.ImageRefresh.
	ImageID string
	// GPUImageID is the AMI of GPU nodes (the EKS-optimized AL2023 NVIDIA AMI), as ImageID;
	// default ImageID.
	GPUImageID string
	// InstanceProfile is the nodes' IAM instance profile, by name or ARN.
	InstanceProfile string
	// SecurityGroupIDs are the nodes' security groups (the cluster security group at least).
	SecurityGroupIDs []string
}

// NodeConfig identifies nodeadm's configuration document.
const (
	NodeConfigAPIVersion = "node.eks.aws/v1alpha1"
	NodeConfigKind       = "NodeConfig"
	// NodeConfigContentType is the MIME type of a NodeConfig part of the user data.
	NodeConfigContentType = "application/node.eks.aws"
	// userDataBoundary separates the parts of the user data; it never occurs in a NodeConfig.
	userDataBoundary = "tiler-nodeadm-boundary"
)

// validate checks the bootstrap configuration; errors are sentences naming the field and where
// its value comes from.
func (b NodeBootstrap) validate() error {
	var errs []error
	if b.APIServerEndpoint == "" {
		errs = append(errs, errors.New("bootstrap.apiServerEndpoint must be set to the EKS cluster's endpoint (describe-cluster cluster.endpoint)"))
	} else if u, err := url.Parse(b.APIServerEndpoint); err != nil || u.Scheme != "https" || u.Host == "" {
		errs = append(errs, fmt.Errorf("bootstrap.apiServerEndpoint %q must be an https URL", b.APIServerEndpoint))
	}
	if b.CertificateAuthority == "" {
		errs = append(errs, errors.New("bootstrap.certificateAuthority must be set to the cluster's base64 CA bundle (describe-cluster cluster.certificateAuthority.data)"))
	} else if _, err := base64.StdEncoding.DecodeString(b.CertificateAuthority); err != nil {
		errs = append(errs, fmt.Errorf("bootstrap.certificateAuthority is not base64: %w", err))
	}
	if b.ServiceCIDR == "" {
		errs = append(errs, errors.New("bootstrap.serviceCIDR must be set to the cluster's service CIDR (describe-cluster cluster.kubernetesNetworkConfig.serviceIpv4Cidr)"))
	} else if _, _, err := net.ParseCIDR(b.ServiceCIDR); err != nil {
		errs = append(errs, fmt.Errorf("bootstrap.serviceCIDR %q is not a CIDR", b.ServiceCIDR))
	}
	for field, id := range map[string]string{"imageID": b.ImageID, "gpuImageID": b.GPUImageID} {
		if id == "" {
			continue
		}
		if err := validImageSetting(id); err != nil {
			errs = append(errs, fmt.Errorf("bootstrap.%s %q %w", field, id, err))
		}
	}
	if b.ImageID == "" {
		errs = append(errs, errors.New("bootstrap.imageID must be set to an EKS-optimized Amazon Linux 2023 AMI (ami-..., or "+SSMImagePrefix+"/aws/service/eks/optimized-ami/…/image_id)"))
	}
	if b.InstanceProfile == "" {
		errs = append(errs, errors.New("bootstrap.instanceProfile must be set to the nodes' IAM instance profile (name or ARN)"))
	}
	if len(b.SecurityGroupIDs) == 0 {
		errs = append(errs, errors.New("bootstrap.securityGroupIDs must list at least one security group (the cluster security group)"))
	}
	for _, sg := range b.SecurityGroupIDs {
		if !strings.HasPrefix(sg, "sg-") {
			errs = append(errs, fmt.Errorf("bootstrap.securityGroupIDs: %q is not a security group ID", sg))
		}
	}
	return errors.Join(errs...)
}

// imageFor returns the image setting of a node (an AMI ID or an SSM parameter): GPUImageID for a
// node with a GPU configuration.
func (b NodeBootstrap) imageFor(gpu api.GPUConfig) string {
	if gpu.Sharing != "" && b.GPUImageID != "" {
		return b.GPUImageID
	}
	return b.ImageID
}

// nodeConfig is nodeadm's NodeConfig, the fields Tiler sets.
type nodeConfig struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Spec       nodeConfigSpec `json:"spec"`
}

type nodeConfigSpec struct {
	Cluster nodeConfigCluster `json:"cluster"`
	Kubelet nodeConfigKubelet `json:"kubelet"`
}

type nodeConfigCluster struct {
	Name                 string `json:"name"`
	APIServerEndpoint    string `json:"apiServerEndpoint"`
	CertificateAuthority string `json:"certificateAuthority"`
	CIDR                 string `json:"cidr"`
}

type nodeConfigKubelet struct {
	Flags []string `json:"flags,omitempty"`
}

// UserData renders the user data of a node: a MIME multi-part document with one
// application/node.eks.aws part holding the NodeConfig, whose kubelet flags register the node
// with the labels (--node-labels; the caller passes cloudprovider.KubeletLabels) and taints
// (--register-with-taints). clusterName is the EKS cluster's name.
func (b NodeBootstrap) UserData(clusterName string, labels map[string]string, taints []corev1.Taint) ([]byte, error) {
	nc := nodeConfig{APIVersion: NodeConfigAPIVersion, Kind: NodeConfigKind, Spec: nodeConfigSpec{
		Cluster: nodeConfigCluster{Name: clusterName, APIServerEndpoint: b.APIServerEndpoint,
			CertificateAuthority: b.CertificateAuthority, CIDR: b.ServiceCIDR},
	}}
	if len(labels) > 0 {
		nc.Spec.Kubelet.Flags = append(nc.Spec.Kubelet.Flags, "--node-labels="+cloudprovider.LabelsFlag(labels))
	}
	if len(taints) > 0 {
		nc.Spec.Kubelet.Flags = append(nc.Spec.Kubelet.Flags, "--register-with-taints="+cloudprovider.TaintsFlag(taints))
	}
	doc, err := yaml.Marshal(nc)
	if err != nil {
		return nil, fmt.Errorf("encoding the NodeConfig: %w", err)
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=%q\r\n\r\n", userDataBoundary)
	w := multipart.NewWriter(&buf)
	if err := w.SetBoundary(userDataBoundary); err != nil {
		return nil, err
	}
	part, err := w.CreatePart(textproto.MIMEHeader{"Content-Type": {NodeConfigContentType}})
	if err != nil {
		return nil, err
	}
	if _, err := part.Write(append([]byte("---\n"), doc...)); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
