package controlplane

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// componentClient checks the health endpoints of kube-scheduler and kube-controller-manager,
// which serve a self-signed certificate generated at start-up. Only loopback URLs built by this
// package are ever requested with it.
var componentClient = &http.Client{Transport: &http.Transport{
	TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health probe of a self-signed component
	DisableKeepAlives: true,
}}

// etcdHealthy checks etcd's /health endpoint.
func (c *ControlPlane) etcdHealthy(ctx context.Context) error {
	body, err := get(ctx, http.DefaultClient, c.etcdURL+"/health")
	if err != nil {
		return err
	}
	var health struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(body, &health); err != nil {
		return fmt.Errorf("decoding etcd /health %q: %w", body, err)
	}
	if health.Health != "true" {
		return fmt.Errorf("etcd not healthy: %s", body)
	}
	return nil
}

// apiServerReady checks kube-apiserver's /readyz as the admin user.
func (c *ControlPlane) apiServerReady(ctx context.Context) error {
	client, err := rest.HTTPClientFor(c.RESTConfig())
	if err != nil {
		return fmt.Errorf("building API server client: %w", err)
	}
	defer client.CloseIdleConnections()
	_, err = get(ctx, client, c.apiServerURL+"/readyz")
	return err
}

// componentHealthy returns a check of a health endpoint (always allowed without credentials).
func componentHealthy(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := get(ctx, componentClient, url)
		return err
	}
}

// defaultServiceAccountExists checks that the serviceaccount controller has created the default
// ServiceAccount of the default namespace; until then the ServiceAccount admission plugin rejects
// pods there.
func (c *ControlPlane) defaultServiceAccountExists(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return fmt.Errorf("building clientset: %w", err)
	}
	if _, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{}); err != nil {
		return fmt.Errorf("getting ServiceAccount default/default: %w", err)
	}
	return nil
}

// get fetches url and returns the body when the status is 200.
func get(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("building request for %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}
