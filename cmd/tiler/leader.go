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

// leaseDuration is how long a Lease holds without renewal; it also bounds how old the last
// successful Lease call of a standby may be for it to answer ready.
const leaseDuration = 15 * time.Second

// runWithLeaderElection runs fn only while this replica holds the tiler-provisioner Lease. Each
// Lease call the API server answers (read, created, renewed) is reported to ready, when set: a
// standby that reaches the API server and may use the Lease can take over, so it is ready.
func runWithLeaderElection(ctx context.Context, kube kubernetes.Interface, namespace string, fn func(context.Context) error,
	log *zap.Logger, ready *readiness) error {
	id, _ := os.Hostname()
	id += "-" + time.Now().Format("150405.000")
	var lock resourcelock.Interface = &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: "tiler-provisioner", Namespace: namespace},
		Client:     kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	if ready != nil {
		lock = &observedLock{Interface: lock, seen: ready.leaseSeen}
	}
	errc := make(chan error, 1)
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock: lock, ReleaseOnCancel: true,
		LeaseDuration: leaseDuration, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
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

// observedLock reports every Lease call the API server answered without an error. A Get of a
// Lease that does not exist yet fails with NotFound, and the Create that follows reports it.
type observedLock struct {
	resourcelock.Interface
	seen func()
}

func (l *observedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r, raw, err := l.Interface.Get(ctx)
	if err == nil {
		l.seen()
	}
	return r, raw, err
}

func (l *observedLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, r)
	if err == nil {
		l.seen()
	}
	return err
}

func (l *observedLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, r)
	if err == nil {
		l.seen()
	}
	return err
}
