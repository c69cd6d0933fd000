package provisioner_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tiler-dev/tiler/internal/controlplane"
	"github.com/tiler-dev/tiler/internal/controlplane/cptest"
	"github.com/tiler-dev/tiler/internal/testwait"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/simulator/simtest"
)

func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }

// TestE2E runs the controller scenarios on one real control plane (starting one takes seconds);
// each scenario uses its own namespace-free pod names and cleans up its nodes.
func TestE2E(t *testing.T) {
	cp := cptest.Start(t, controlplane.Options{})
	t.Run("BindsMixedWorkload", func(t *testing.T) { testBindsMixedWorkload(t, cp) })
	t.Run("NoSecondPurchaseDuringBootAndDeviceGap", func(t *testing.T) { testNoSecondPurchase(t, cp) })
	t.Run("OnePublisherPerNode", func(t *testing.T) { testOnePublisherPerNode(t, cp) })
	t.Run("DRADriverServesPlainGPU", func(t *testing.T) { testDRADriverServesPlainGPU(t, cp) })
	t.Run("RestartMidLaunch", func(t *testing.T) { testRestartMidLaunch(t, cp) })
	t.Run("InsufficientCapacityFallsBack", func(t *testing.T) { testInsufficientCapacity(t, cp) })
	t.Run("CloudAPIFailuresRetried", func(t *testing.T) { testCloudAPIFailuresRetried(t, cp) })
	t.Run("LostLaunchAnswerAcrossRestart", func(t *testing.T) { testLostLaunchAnswerAcrossRestart(t, cp) })
	t.Run("RetryAnsweredWithEndedInstance", func(t *testing.T) { testRetryAnsweredWithEndedInstance(t, cp) })
	t.Run("RestartAfterInstanceDeleted", func(t *testing.T) { testRestartAfterInstanceDeleted(t, cp) })
	t.Run("RestartDuringInstanceDeletion", func(t *testing.T) { testRestartDuringInstanceDeletion(t, cp) })
	t.Run("InstanceEndedWhileBooting", func(t *testing.T) { testInstanceEndedWhileBooting(t, cp) })
	t.Run("NoLeakWhenListFails", func(t *testing.T) { testNoLeakWhenListFails(t, cp) })
	t.Run("ProbeWhenNodesDoNotJoin", func(t *testing.T) { testProbeWhenNodesDoNotJoin(t, cp) })
	t.Run("InvalidPolicyKeepsLastValid", func(t *testing.T) { testInvalidPolicy(t, cp) })
	t.Run("EmptyNodeRemoved", func(t *testing.T) { testEmptyNodeRemoved(t, cp) })
	t.Run("SpotInterruptionReplaced", func(t *testing.T) { testSpotInterruption(t, cp) })
	t.Run("SpotInterruptedBeforeRegistration", func(t *testing.T) { testSpotInterruptedBeforeRegistration(t, cp) })
	t.Run("MIGRelayoutInsteadOfPurchase", func(t *testing.T) { testMIGRelayout(t, cp) })
	t.Run("Reservation", func(t *testing.T) { testReservation(t, cp, false) })
	t.Run("ReservationSharedBootstrap", func(t *testing.T) { testReservation(t, cp, true) })
	t.Run("ReservationTTL", func(t *testing.T) { testReservationTTL(t, cp) })
	t.Run("PrescaleBuysAhead", func(t *testing.T) { testPrescaleBuysAhead(t, cp) })
	t.Run("Placeholders", func(t *testing.T) { testPlaceholders(t, cp) })
}

// testBindsMixedWorkload: CPU services spread over zones, a cache with anti-affinity and GPU
// pods all end bound by the real kube-scheduler on the nodes Tiler bought, with no more launches
// than nodes.
func testBindsMixedWorkload(t *testing.T, cp *controlplane.ControlPlane) {
	e := newEnv(t, cp, testConfig(), nil)
	var pods []*corev1.Pod
	for i := 0; i < 6; i++ {
		pods = append(pods, simtest.Pod(named("web", i)).Label("app", "web").CPU("1").Mem("2Gi").
			Spread(corev1.LabelTopologyZone, 1, true).Obj())
	}
	for i := 0; i < 3; i++ {
		pods = append(pods, simtest.Pod(named("cache", i)).Label("app", "cache").CPU("500m").Mem("4Gi").
			AntiAffinity(corev1.LabelHostname, "cache").Obj())
	}
	for i := 0; i < 2; i++ {
		pods = append(pods, simtest.Pod(named("infer", i)).Label("app", "infer").CPU("2").Mem("8Gi").GPU(1).Obj())
	}
	start := time.Now()
	e.create(pods...)
	bound := e.waitBound(2*time.Minute, pods...)
	t.Logf("all %d pods bound %.1fs after creation", len(pods), time.Since(start).Seconds())
	nodes := map[string]bool{}
	for _, n := range bound {
		nodes[n] = true
	}
	managed := e.managedNodes()
	if got := e.launches(); got != len(managed) {
		t.Errorf("%d launches for %d managed nodes", got, len(managed))
		e.explainPurchases()
	}
	for n := range nodes {
		if !strings.HasPrefix(n, "tiler-") {
			t.Errorf("a pod is bound to %s, not a node Tiler bought", n)
		}
	}
	e.cleanup(pods)
}

// cleanup deletes the pods and the managed nodes with their instances.
func (e *env) cleanup(pods []*corev1.Pod) {
	ctx := context.Background()
	e.stop()
	zero := int64(0)
	for _, p := range pods {
		_ = e.kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	insts, _ := e.cloud.List(ctx)
	for _, i := range insts {
		_ = e.cloud.Delete(ctx, i.ID)
	}
	_ = e.dyn.Resource(provisioner.LaunchRecordsResource).Namespace(e.cfg.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	_ = e.kube.CoreV1().ConfigMaps(e.cfg.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: "tiler.dev/cost-policy"})
	_ = e.kube.CoreV1().ConfigMaps(e.cfg.Namespace).Delete(ctx, provisioner.FailedImagesConfigMap, metav1.DeleteOptions{})
	_ = e.kube.CoreV1().ConfigMaps(e.cfg.Namespace).Delete(ctx, provisioner.FailedBootsConfigMap, metav1.DeleteOptions{})
	// Not fatal: a scenario ends once its nodes are gone or after 30 s.
	_ = testwait.Poll(testwait.Slow, 30*time.Second, func() bool { return len(e.managedNodes()) == 0 })
}
