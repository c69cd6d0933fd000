// Package crds embeds Tiler's CustomResourceDefinitions (the YAML files of this directory) and
// installs them through the API server, for the developer binary's demo, the fidelity campaign and
// the tests, all on local control planes. Besides Tiler's own LaunchRecord, the directory holds
// CRDs written for Tiler from the documented upstream APIs it reads and writes
// (autoscaling.x-k8s.io: ProvisioningRequest v1, CapacityBuffer v1beta1); on a real cluster they
// are created only where none exists (Helm's crds/, `kubectl create`), so an upstream CRD
// installed by the Cluster Autoscaler or Kueue is kept. Install, for local control planes,
// applies every file over what is there.
package crds

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

//go:embed *.yaml
var files embed.FS

// LaunchRecords is the CustomResourceDefinition of launchrecords.tiler.dev.
//
//go:embed tiler.dev_launchrecords.yaml
var LaunchRecords []byte

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// All returns the embedded definitions, parsed.
func All() ([]*unstructured.Unstructured, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		var obj map[string]any
		if err := yaml.UnmarshalStrict(b, &obj); err != nil {
			return nil, fmt.Errorf("deploy/crds/%s: %w", n, err)
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
	return out, nil
}

// Install applies every embedded definition (server-side apply, field manager "tiler") and
// waits until the API server serves them (condition Established), at most timeout.
func Install(ctx context.Context, client dynamic.Interface, timeout time.Duration) error {
	defs, err := All()
	if err != nil {
		return err
	}
	return apply(ctx, client, timeout, defs)
}

// InstallYAML installs CustomResourceDefinitions given as YAML documents (one definition each:
// other projects' definitions for tests, such as Kueue's) as Install does.
func InstallYAML(ctx context.Context, client dynamic.Interface, timeout time.Duration, docs ...[]byte) error {
	var defs []*unstructured.Unstructured
	for i, b := range docs {
		var obj map[string]any
		if err := yaml.Unmarshal(b, &obj); err != nil {
			return fmt.Errorf("CustomResourceDefinition document %d: %w", i, err)
		}
		if obj["kind"] != "CustomResourceDefinition" {
			return fmt.Errorf("CustomResourceDefinition document %d: kind %v, want CustomResourceDefinition", i, obj["kind"])
		}
		defs = append(defs, &unstructured.Unstructured{Object: obj})
	}
	return apply(ctx, client, timeout, defs)
}

func apply(ctx context.Context, client dynamic.Interface, timeout time.Duration, defs []*unstructured.Unstructured) error {
	for _, d := range defs {
		b, err := d.MarshalJSON()
		if err != nil {
			return err
		}
		force := true
		if _, err := client.Resource(crdGVR).Patch(ctx, d.GetName(), types.ApplyPatchType, b,
			metav1.PatchOptions{FieldManager: "tiler", Force: &force}); err != nil {
			return fmt.Errorf("installing CustomResourceDefinition %s: %w", d.GetName(), err)
		}
	}
	for _, d := range defs {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			got, err := client.Resource(crdGVR).Get(ctx, d.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, nil //nolint:nilerr // not visible yet: poll again
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CustomResourceDefinition %s not established after %s: %w", d.GetName(), timeout, err)
		}
	}
	return nil
}
