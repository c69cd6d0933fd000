package controlplane

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// ServiceAccountIssuer is the issuer of the service-account tokens the API server signs.
const ServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// etcdArgs is a single-member etcd on loopback. fsync is off: the data dies with the test anyway.
func (c *ControlPlane) etcdArgs(clientPort, peerPort int) []string {
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	args := []string{
		"--name=tiler",
		"--data-dir=" + filepath.Join(c.dir, "etcd"),
		"--listen-client-urls=" + c.etcdURL,
		"--advertise-client-urls=" + c.etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=tiler=" + peerURL,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}
	return append(args, c.opts.EtcdArgs...)
}

// apiServerArgs serves HTTPS on loopback with the generated certificate, authenticates the admin
// through a static token, authorizes with Node and RBAC, and signs service-account tokens with the
// generated key. resource.k8s.io/v1 (DeviceClass, ResourceClaim, ResourceClaimTemplate,
// ResourceSlice) is GA and served by default in v1.37; Options.RuntimeConfig serves beta APIs.
func (c *ControlPlane) apiServerArgs(port int) []string {
	s := c.secrets
	args := []string{
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + filepath.Join(c.dir, "apiserver"),
		"--tls-cert-file=" + s.certFile,
		"--tls-private-key-file=" + s.keyFile,
		"--client-ca-file=" + s.caFile,
		// kube-scheduler and kube-controller-manager read the request-header settings for their
		// delegated authentication and log errors every few seconds without them. No front-proxy
		// client certificate is ever issued, so reusing the CA opens nothing.
		"--requestheader-client-ca-file=" + s.caFile,
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--token-auth-file=" + s.tokenFile,
		"--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range=" + c.opts.ServiceClusterIPRange,
		"--service-account-issuer=" + ServiceAccountIssuer,
		"--service-account-key-file=" + s.saPubFile,
		"--service-account-signing-key-file=" + s.saKeyFile,
		"--allow-privileged=true",
		// The "kubernetes" Service would point at 127.0.0.1, which Endpoints validation rejects.
		"--endpoint-reconciler-type=none",
	}
	args = append(args, c.opts.featureGateFlag()...)
	args = append(args, c.opts.runtimeConfigFlag()...)
	args = append(args, c.opts.klogFlags()...)
	return append(args, c.opts.APIServerArgs...)
}

// componentArgs are the flags kube-scheduler and kube-controller-manager share: the admin
// kubeconfig for the API and for delegated authentication/authorization, no leader election, and
// a self-signed serving certificate on a loopback port.
func (c *ControlPlane) componentArgs(name string, port int) []string {
	args := []string{
		"--kubeconfig=" + c.kubeconfig,
		"--authentication-kubeconfig=" + c.kubeconfig,
		"--authorization-kubeconfig=" + c.kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + filepath.Join(c.dir, name),
	}
	args = append(args, c.opts.featureGateFlag()...)
	return append(args, c.opts.klogFlags()...)
}

func (c *ControlPlane) schedulerArgs(port int) ([]string, error) {
	args := c.componentArgs(SchedulerBinary, port)
	if len(c.opts.SchedulerConfig) > 0 {
		path, err := c.writeSchedulerConfig()
		if err != nil {
			return nil, err
		}
		args = append(args, "--config="+path)
	}
	return append(args, c.opts.SchedulerArgs...), nil
}

// writeSchedulerConfig writes Options.SchedulerConfig into the run directory with the control
// plane's kubeconfig as clientConnection.kubeconfig (kube-scheduler ignores --kubeconfig when
// --config is set) and returns its path.
func (c *ControlPlane) writeSchedulerConfig() (string, error) {
	var cfg map[string]any
	if err := yaml.UnmarshalStrict(c.opts.SchedulerConfig, &cfg); err != nil {
		return "", fmt.Errorf("controlplane: SchedulerConfig: %w", err)
	}
	if cfg["kind"] != "KubeSchedulerConfiguration" {
		return "", fmt.Errorf("controlplane: SchedulerConfig: kind must be KubeSchedulerConfiguration, not %v", cfg["kind"])
	}
	conn, _ := cfg["clientConnection"].(map[string]any)
	if conn == nil {
		conn = map[string]any{}
	}
	conn["kubeconfig"] = c.kubeconfig
	cfg["clientConnection"] = conn
	cfg["leaderElection"] = map[string]any{"leaderElect": false}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.dir, "kube-scheduler-config.yaml")
	return path, os.WriteFile(path, b, 0o600)
}

// controllerManagerArgs runs every default controller (resourceclaim, deployment, replicaset,
// job, garbagecollector, serviceaccount, serviceaccount-token, namespace, nodelifecycle, ...)
// with the admin credentials.
func (c *ControlPlane) controllerManagerArgs(port int) []string {
	args := append(c.componentArgs(ControllerManagerBinary, port),
		"--controllers=*",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file="+c.secrets.saKeyFile,
		"--root-ca-file="+c.secrets.caFile,
		"--service-cluster-ip-range="+c.opts.ServiceClusterIPRange,
	)
	return append(args, c.opts.ControllerManagerArgs...)
}
