package main

import (
	"context"
	"os"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

type atomicBool = atomic.Bool

// runWithLeaderElection runs fn only while this replica holds the tiler-provisioner Lease.
func runWithLeaderElection(ctx context.Context, kube kubernetes.Interface, namespace string, fn func(context.Context) error, log *zap.Logger) error {
	id, _ := os.Hostname()
	id += "-" + time.Now().Format("150405.000")
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: "tiler-provisioner", Namespace: namespace},
		Client:     kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	errc := make(chan error, 1)
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock: lock, ReleaseOnCancel: true,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { errc <- fn(ctx) },
			OnStoppedLeading: func() { log.Info("lost the leader lease", zap.String("identity", id)) },
		},
	})
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}
