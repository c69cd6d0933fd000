package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/deploy/crds"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider/sim"
	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/provisioner"
)

func init() { register(newDemoCmd) }

func newDemoCmd() *cobra.Command {
	var examples string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run Tiler end to end on a local control plane with the simulated cloud and the sample workloads",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), cmd.OutOrStdout(), examples, timeout)
		},
	}
	cmd.Flags().StringVar(&examples, "examples", "deploy/examples", "folder of sample manifests to apply")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Minute, "give up when the pods are not all bound by then")
	return cmd
}

func runDemo(ctx context.Context, w io.Writer, examples string, timeout time.Duration) error {
	dir, err := os.MkdirTemp("", "tiler-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintln(w, "== starting a local control plane (etcd, kube-apiserver, kube-scheduler, kube-controller-manager)")
	cp, err := controlplane.Start(ctx, controlplane.Options{})
	if err != nil {
		return err
	}
	defer cp.Stop()
	kube, err := kubernetes.NewForConfig(cp.RESTConfig())
	if err != nil {
		return err
	}
	for _, ns := range []string{"tiler-system", "demo"} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dyn, err := dynamic.NewForConfig(cp.RESTConfig())
	if err != nil {
		return err
	}
	if err := crds.Install(ctx, dyn, time.Minute); err != nil {
		return err
	}
	cloud, err := startDemoController(ctx, kube, dyn, dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "== tiler run --cloud sim (embedded catalog %s; controller log: %s)\n", catalog.DefaultName, filepath.Join(dir, "tiler.log"))
	start := time.Now()
	if err := applyExamples(ctx, kube, examples, w); err != nil {
		return err
	}
	if err := waitAllBound(ctx, kube, w, timeout); err != nil {
		return err
	}
	fmt.Fprintf(w, "== every pod bound by the real kube-scheduler %.1fs after the workloads were applied\n\n", time.Since(start).Seconds())
	return printBought(ctx, kube, cloud, w)
}

func startDemoController(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, dir string) (*sim.Provider, error) {
	cat, err := catalog.Embedded(catalog.DefaultName)
	if err != nil {
		return nil, err
	}
	logCfg := zap.NewProductionConfig()
	logCfg.OutputPaths = []string{filepath.Join(dir, "tiler.log")}
	log, err := logCfg.Build()
	if err != nil {
		return nil, err
	}
	cfg := provisioner.DefaultConfig()
	cfg.BatchIdle, cfg.BatchMax, cfg.ResyncPeriod = 500*time.Millisecond, 3*time.Second, time.Second
	sc := sim.DefaultConfig(cat, cfg.ClusterName, filepath.Join(dir, "cloud.json"))
	sc.BootDelay, sc.DeviceDelay, sc.StepInterval, sc.Logger = 3*time.Second, 2*time.Second, 250*time.Millisecond, log.Named("sim")
	cloud, err := sim.New(sc, kube, clock.RealClock{})
	if err != nil {
		return nil, err
	}
	ctrl, err := provisioner.New(provisioner.Options{Config: cfg, Kube: kube, Dynamic: dyn, Provider: cloud, Catalog: cat, Clock: clock.RealClock{},
		Logger: log, Metrics: provisioner.NewMetrics(prometheus.NewRegistry()), Interruptions: cloud.Interruptions()})
	if err != nil {
		return nil, err
	}
	go func() { _ = cloud.Run(ctx) }()
	go func() { _ = ctrl.Run(ctx) }()
	return cloud, nil
}

// applyExamples creates every object of the folder's YAML files, in file name order.
func applyExamples(ctx context.Context, kube kubernetes.Interface, dir string, w io.Writer) error {
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	sort.Strings(files)
	if len(files) == 0 {
		return fmt.Errorf("no sample manifests in %s", dir)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		r := utilyaml.NewYAMLReader(bufioReader(data))
		for i := 0; ; i++ {
			doc, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			if strings.TrimSpace(stripYAMLComments(string(doc))) == "" {
				continue
			}
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
			if err != nil {
				return fmt.Errorf("%s document %d: %w", f, i, err)
			}
			if err := createObject(ctx, kube, obj); err != nil {
				return fmt.Errorf("%s document %d: %w", f, i, err)
			}
		}
		fmt.Fprintf(w, "   applied %s\n", filepath.Base(f))
	}
	return nil
}

func createObject(ctx context.Context, kube kubernetes.Interface, obj any) error {
	var err error
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		_, err = kube.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *appsv1.Deployment:
		_, err = kube.AppsV1().Deployments(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *batchv1.Job:
		_, err = kube.BatchV1().Jobs(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *resourcev1.DeviceClass:
		_, err = kube.ResourceV1().DeviceClasses().Create(ctx, o, metav1.CreateOptions{})
	case *resourcev1.ResourceClaimTemplate:
		_, err = kube.ResourceV1().ResourceClaimTemplates(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	default:
		return fmt.Errorf("the demo does not apply %T", obj)
	}
	return err
}

// waitAllBound prints progress until every pod in namespace demo is bound.
func waitAllBound(ctx context.Context, kube kubernetes.Interface, w io.Writer, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		pods, err := kube.CoreV1().Pods("demo").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		nodes, _ := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: api.LabelPool})
		bound := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		line := fmt.Sprintf("   pods bound %d/%d, nodes registered %d", bound, len(pods.Items), len(nodes.Items))
		if line != last {
			fmt.Fprintln(w, line)
			last = line
		}
		if len(pods.Items) >= 35 && bound == len(pods.Items) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not every pod was bound within %s", timeout)
		}
		time.Sleep(time.Second)
	}
}

// printBought prints the nodes Tiler bought, their GPU configuration and the fleet's price.
func printBought(ctx context.Context, kube kubernetes.Interface, cloud *sim.Provider, w io.Writer) error {
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: api.LabelPool})
	if err != nil {
		return err
	}
	pods, err := kube.CoreV1().Pods("demo").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	perNode := map[string]int{}
	for _, p := range pods.Items {
		perNode[p.Spec.NodeName]++
	}
	insts, err := cloud.List(ctx)
	if err != nil {
		return err
	}
	price := map[string]float64{}
	for _, i := range insts {
		price[i.NodeName] = i.PricePerHour
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tPOOL\tTYPE\tZONE\tCAPACITY\t$/H\tGPUS\tPODS")
	total := 0.0
	var gpuAlloc, gpuUsed int64
	for _, n := range nodes.Items {
		l := n.Labels
		gpus := "-"
		if c := l[api.LabelGPUCount]; c != "" {
			gpus = c + "×" + l[api.LabelGPUModel]
			if cfg := l[api.LabelMIGConfig]; cfg != "" {
				gpus += " mig " + cfg
			}
			if r := l[api.LabelGPUReplicas]; r != "" {
				gpus += " time-sliced ×" + r
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.4f\t%s\t%d\n", n.Name, l[api.LabelPool], l[corev1.LabelInstanceTypeStable],
			l[corev1.LabelTopologyZone], l[api.LabelCapacityType], price[n.Name], gpus, perNode[n.Name])
		total += price[n.Name]
		for name, q := range n.Status.Allocatable {
			if strings.HasPrefix(string(name), "nvidia.com/") {
				gpuAlloc += q.Value()
			}
		}
	}
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			for name, q := range c.Resources.Requests {
				if strings.HasPrefix(string(name), "nvidia.com/") {
					gpuUsed += q.Value()
				}
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ratio := 0.0
	if gpuAlloc > 0 {
		ratio = float64(gpuUsed) / float64(gpuAlloc)
	}
	fmt.Fprintf(w, "\n%d nodes bought for %d pods, $%.4f/h; GPU devices (whole, MIG slices, time-slice replicas) allocated %d of %d (%.0f%%)\n",
		len(nodes.Items), len(pods.Items), total, gpuUsed, gpuAlloc, 100*ratio)
	fmt.Fprintln(w, "== tearing down")
	return nil
}
