package provisioner_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/tiler-dev/tiler/deploy/crds"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/provisioner"
)

// installCRDs installs Tiler's CustomResourceDefinitions (deploy/crds) on the control plane and
// returns an admin client for them.
func installCRDs(t testing.TB, cp *controlplane.ControlPlane) dynamic.Interface {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(cp.RESTConfig())
	if err := crds.Install(context.Background(), dyn, time.Minute); err != nil {
		t.Fatal(err)
	}
	return dyn
}

// withRecordsClient gives opts the launch records' client built from rc.
func withRecordsClient(opts *provisioner.Options, rc *rest.Config) {
	opts.Dynamic = dynamic.NewForConfigOrDie(rc)
}

// cleanRecords deletes every launch record in tiler-system.
func cleanRecords(t testing.TB, rc *rest.Config) {
	t.Helper()
	err := dynamic.NewForConfigOrDie(rc).Resource(provisioner.LaunchRecordsResource).Namespace("tiler-system").
		DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
}
