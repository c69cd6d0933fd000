// Package manifest reads the Kubernetes manifests in deploy/ and puts their RBAC to work on a test
// control plane: Decode turns a multi-document YAML file into typed objects, ApplyRBAC creates the
// Namespaces, ServiceAccounts, Roles and bindings among them, Impersonate acts as one of the
// service accounts (with the groups its token would carry), and Denied records every request the
// API server refuses with 403 Forbidden, so that a test can fail naming the missing permission.
//
// Typical use in a test against internal/controlplane:
//
//	objs, err := manifest.Decode("deploy/tiler.yaml")
//	...
//	err = manifest.ApplyRBAC(ctx, kubernetes.NewForConfigOrDie(cp.RESTConfig()), objs)
//	...
//	denied := &manifest.Denied{}
//	client := kubernetes.NewForConfigOrDie(manifest.Impersonate(cp.RESTConfig(), "tiler-system", "tiler", denied.Wrap))
//	// ... drive the controller with client ...
//	if reqs := denied.List(); len(reqs) > 0 { t.Errorf("refused:\n  %s", strings.Join(reqs, "\n  ")) }
package manifest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// Decode decodes every document of a multi-document YAML file into a typed object of client-go's
// scheme, in the file's order; documents of only comments and blank lines are skipped. An error
// names the file and the document's position in it (1-based, counting the skipped ones).
func Decode(path string) ([]runtime.Object, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var objs []runtime.Object
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, n, err)
		}
		if !hasContent(doc) {
			continue
		}
		o, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, n, err)
		}
		objs = append(objs, o)
	}
}

// hasContent reports whether a YAML document has more than comments and blank lines.
func hasContent(doc []byte) bool {
	for line := range strings.Lines(string(doc)) {
		if s := strings.TrimSpace(line); s != "" && s != "---" && !strings.HasPrefix(s, "#") {
			return true
		}
	}
	return false
}

// ApplyRBAC creates, in order, the Namespaces, ServiceAccounts, ClusterRoles, ClusterRoleBindings,
// Roles and RoleBindings among objs; it leaves every other object alone. It stops at the first
// object the API server does not create.
func ApplyRBAC(ctx context.Context, admin kubernetes.Interface, objs []runtime.Object) error {
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Namespace:
			_, err = admin.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ServiceAccount:
			_, err = admin.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			_, err = admin.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = admin.RbacV1().Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = admin.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		default:
			continue
		}
		if err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.(metav1.Object).GetName(), err)
		}
	}
	return nil
}

// User is the user name the API server sees for a token of the service account.
func User(namespace, serviceAccount string) string {
	return "system:serviceaccount:" + namespace + ":" + serviceAccount
}

// Impersonate returns a copy of the admin configuration that acts as the service account, with the
// groups a token of that account carries; wrap, when not nil, sees every round trip (Denied.Wrap
// records the refusals).
func Impersonate(admin *rest.Config, namespace, serviceAccount string, wrap func(http.RoundTripper) http.RoundTripper) *rest.Config {
	c := rest.CopyConfig(admin)
	c.Impersonate = rest.ImpersonationConfig{UserName: User(namespace, serviceAccount),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}}
	if wrap != nil {
		c.Wrap(wrap)
	}
	return c
}

// Denied records the requests the API server answered with 403 Forbidden. The zero value is ready
// to use; it is safe for concurrent use.
type Denied struct {
	mu   sync.Mutex
	reqs []string
}

// Wrap returns a round tripper that passes requests to rt and records those answered with 403 as
// "METHOD /request/uri".
func (d *Denied) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		if err == nil && resp.StatusCode == http.StatusForbidden {
			d.mu.Lock()
			d.reqs = append(d.reqs, r.Method+" "+r.URL.RequestURI())
			d.mu.Unlock()
		}
		return resp, err
	})
}

// List returns the distinct refused requests, each with how often it was refused ("GET /api/v1/nodes
// (3×)"), sorted; it is empty when nothing was refused.
func (d *Denied) List() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := map[string]int{}
	for _, r := range d.reqs {
		n[r]++
	}
	out := make([]string, 0, len(n))
	for r, k := range n {
		out = append(out, fmt.Sprintf("%s (%d×)", r, k))
	}
	sort.Strings(out)
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
