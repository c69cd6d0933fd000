package manifest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

func writeManifest(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDecodeSkipsCommentDocuments(t *testing.T) {
	path := writeManifest(t, `# header only
---
apiVersion: v1
kind: Namespace
metadata:
  name: a
---
# between
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
  namespace: a
`)
	objs, err := Decode(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("got %d objects, want 2: %v", len(objs), objs)
	}
	if _, ok := objs[0].(*corev1.Namespace); !ok {
		t.Errorf("first object %T, want *v1.Namespace", objs[0])
	}
	if _, ok := objs[1].(*appsv1.Deployment); !ok {
		t.Errorf("second object %T, want *v1.Deployment", objs[1])
	}
}

func TestDecodeErrorNamesDocument(t *testing.T) {
	path := writeManifest(t, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: NoSuchKind\n")
	_, err := Decode(path)
	if err == nil || !strings.Contains(err.Error(), path+": document 2:") {
		t.Fatalf("Decode error %v, want one naming %s and document 2", err, path)
	}
}

func TestDecodeDeployManifest(t *testing.T) {
	objs, err := Decode(filepath.Join("..", "..", "deploy", "tiler.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) == 0 {
		t.Fatal("deploy/tiler.yaml has no objects")
	}
}

func TestApplyRBACCreatesOnlyRBAC(t *testing.T) {
	meta := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	objs := []runtime.Object{
		&corev1.Namespace{ObjectMeta: meta("", "ns")},
		&corev1.ServiceAccount{ObjectMeta: meta("ns", "sa")},
		&rbacv1.ClusterRole{ObjectMeta: meta("", "cr")},
		&rbacv1.ClusterRoleBinding{ObjectMeta: meta("", "crb")},
		&rbacv1.Role{ObjectMeta: meta("ns", "r")},
		&rbacv1.RoleBinding{ObjectMeta: meta("ns", "rb")},
		&appsv1.Deployment{ObjectMeta: meta("ns", "d")},
	}
	kube := fake.NewClientset()
	ctx := context.Background()
	if err := ApplyRBAC(ctx, kube, objs); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().RoleBindings("ns").Get(ctx, "rb", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	if _, err := kube.AppsV1().Deployments("ns").Get(ctx, "d", metav1.GetOptions{}); err == nil {
		t.Error("ApplyRBAC created the Deployment")
	}
	if err := ApplyRBAC(ctx, kube, objs[:1]); err == nil || !strings.Contains(err.Error(), "*v1.Namespace ns") {
		t.Errorf("creating the Namespace again: %v, want an error naming it", err)
	}
}

func TestDeniedRecordsForbidden(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/secret") {
			w.WriteHeader(http.StatusForbidden)
		}
	}))
	defer srv.Close()
	d := &Denied{}
	client := &http.Client{Transport: d.Wrap(http.DefaultTransport)}
	for _, p := range []string{"/ok", "/secret?x=1", "/secret?x=1", "/secret2"} {
		resp, err := client.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	want := []string{"GET /secret2 (1×)", "GET /secret?x=1 (2×)"}
	if got := d.List(); !reflect.DeepEqual(got, want) {
		t.Errorf("List() = %q, want %q", got, want)
	}
}

func TestImpersonate(t *testing.T) {
	admin := &rest.Config{Host: "https://127.0.0.1:6443"}
	c := Impersonate(admin, "tiler-system", "tiler", nil)
	if c.Impersonate.UserName != "system:serviceaccount:tiler-system:tiler" ||
		!reflect.DeepEqual(c.Impersonate.Groups, []string{"system:serviceaccounts", "system:serviceaccounts:tiler-system", "system:authenticated"}) {
		t.Errorf("impersonation %+v", c.Impersonate)
	}
	if admin.Impersonate.UserName != "" {
		t.Error("Impersonate changed the admin configuration")
	}
}
