package main

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

type atomicBool = atomic.Bool

// leaderTiming is the leader election's timing (--leader-election-lease-duration,
// --leader-election-renew-deadline, --leader-election-retry-period): how long a Lease holds without
// renewal (which also bounds how old the last successful Lease call of a standby may be for it to
// answer ready), how long the leader keeps trying to renew before it gives up leading, and how
// often every replica tries to acquire or renew. A killed leader is replaced about lease plus
// retry (jittered by up to 1.2 retry) after its last renewal.
type leaderTiming struct {
	lease, renew, retry time.Duration
}

// defaultLeaderTiming is 10s, 7s, 1s: a killed leader is replaced within 15 s (about 10 s plus a
// jittered retry; internal/chaos measures it), where client-go's and kube-controller-manager's
// 15s, 10s, 2s take 16–19 s. The leader still rides out an API server that answers no Lease call
// for up to 7 s; one that stops leading exits and is restarted, and a launch it left half done is
// recovered by the next leader (Recover) without a second purchase.
var defaultLeaderTiming = leaderTiming{lease: 10 * time.Second, renew: 7 * time.Second, retry: time.Second}

// validate checks what client-go's leader election requires (it panics otherwise): lease >
// renew > 1.2 × retry > 0. Errors name the flag.
func (l leaderTiming) validate() error {
	switch {
	case l.retry <= 0:
		return fmt.Errorf("--leader-election-retry-period %s: must be positive", l.retry)
	case float64(l.renew) <= leaderelection.JitterFactor*float64(l.retry):
		return fmt.Errorf("--leader-election-renew-deadline %s: must be more than %.1f × --leader-election-retry-period (%s)", l.renew, leaderelection.JitterFactor, l.retry)
	case l.lease <= l.renew:
		return fmt.Errorf("--leader-election-lease-duration %s: must be more than --leader-election-renew-deadline (%s)", l.lease, l.renew)
	}
	return nil
}

// runWithLeaderElection runs fn only while this replica holds the tiler-provisioner Lease. Each
// Lease call the API server answers (read, created, renewed) is reported to ready, when set: a
// standby that reaches the API server and may use the Lease can take over, so it is ready.
func runWithLeaderElection(ctx context.Context, kube kubernetes.Interface, namespace string, timing leaderTiming, fn func(context.Context) error,
	log *zap.Logger, ready *readiness) error {
	id := leaderIdentity()
	log.Info("leader election: waiting for the Lease", zap.String("identity", id), zap.String("lease", namespace+"/tiler-provisioner"))
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
		LeaseDuration: timing.lease, RenewDeadline: timing.renew, RetryPeriod: timing.retry,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				log.Info("leading: this replica holds the Lease", zap.String("identity", id))
				errc <- fn(ctx)
			},
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

// leaderIdentity names this replica in the Lease: its host name (the pod's name in a Deployment)
// and a random UUID, as kube-controller-manager does. A name that only adds the start time can
// repeat: two replicas on one host started in the same millisecond would share it, and each would
// take the other's renewals for its own and lead at once.
func leaderIdentity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "tiler"
	}
	return host + "_" + string(uuid.NewUUID())
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
