package provisioner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tiler-dev/tiler/api"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/api/policy"
	"github.com/tiler-dev/tiler/cloudprovider"
)

// Controller is the provisioner. Build it with New, then call Run (or, in tests, Start and
// Reconcile).
type Controller struct {
	cfg      Config
	kube     kubernetes.Interface
	provider cloudprovider.Provider
	clock    clock.WithTicker
	log      *zap.Logger
	metrics  *Metrics
	recorder record.EventRecorder
	// broadcaster delivers the recorder's Events; Run shuts it down when it returns.
	broadcaster record.EventBroadcaster
	factory     informers.SharedInformerFactory
	policyInf   informers.SharedInformerFactory
	// podGroups is the PodGroup informer, nil when the API server does not serve the native gang
	// API (podgroups.go).
	podGroups cache.SharedIndexInformer
	// unplaceable limits the NotTriggerScaleUp Events on pods without a place (unplaceable.go).
	unplaceable *unplaceableLimiter
	catalog     *catalog.Catalog
	records     *recordStore
	unavailable *cloudprovider.UnavailableOfferings

	mu       sync.Mutex
	policy   *policy.CostPolicy // last valid policy; nil means the default
	policyRV map[string]string  // ConfigMap resourceVersion already judged
	boot     *bootTimes         // launch-to-Ready times per pool (boottime.go)
	trigger  chan struct{}
	// arrival tells an open batch that a pod joined what it plans (podChanged).
	arrival chan struct{}
	// disruptWake asks the disruption loop for a pass now (an interruption notice came).
	disruptWake chan struct{}
	// wakeAt is when the pending pokeAfter pokes (zero: none).
	wakeAt time.Time
	// launches are the launch calls under way (launches.go).
	launches launchTracker
	// imageMemory holds the image failures not written yet (imagefailures.go).
	imageMemory imageMemory
	// windows caches the cloud's capacity reservation windows (reservationwindows.go).
	windows windowCache

	// batchMu serialises batches; it guards memory and placeholderErr.
	batchMu sync.Mutex
	// memory is what decisions carry from batch to batch (Decide).
	memory *Memory
	// boots is what the failed-boots ConfigMap holds (failedboots.go).
	boots bootMemory
	// placeholderErr is the last placeholder failure logged at Warn level (later repeats log at
	// Debug).
	placeholderErr string

	// catalogSource, when set, supplies each batch's catalog (live prices).
	catalogSource func() *catalog.Catalog
	// interruptions, when set, delivers the cloud's interruption notices.
	interruptions cloudprovider.InterruptionSource
	// prescaler, when set, adds the pods forecasts expect (forecast demand) to each batch.
	prescaler Prescaler
	// provreqs, when set, reads and answers the ProvisioningRequests (provreq.go).
	provreqs ProvisioningRequestSource
	// dyn is the dynamic client (launch records, the ProvisioningRequest watch).
	dyn dynamic.Interface
	// onBatch, when set, sees every batch (Options.OnBatch).
	onBatch func(State, *Result)
	// nominations keeps the nominations of planned pods in force between batches; nil when
	// Config.Nominate is off.
	nominations *nominationWatch
	// reservations adds node-reservation tolerations to planned pods and ends node reservations;
	// nil when Config.Reserve is off.
	reservations *reservationWatch
	// synced is set once Start has seen every informer cache sync (Synced).
	synced atomic.Bool
	// dclock is the disruption loop's clock (Options.DisruptionClock).
	dclock clock.WithTicker
	// disruption is what the disruption loop and the batches share in memory (disruption.go).
	disruption *disruptionMemory
	// onDisruption, when set, sees every disruption pass (Options.OnDisruption).
	onDisruption func(*DisruptionPass)
}

// Synced reports whether the controller's informer caches have synced: before, it knows nothing
// of the cluster (an unreachable API server keeps it so), and `tiler run` answers /readyz 503.
func (c *Controller) Synced() bool { return c.synced.Load() }

// Prescaler turns forecasts into forecast demand: expected pods, pending pods that do not exist
// yet, planned like real ones so that capacity is bought ahead of load. The forecast pre-scaler
// (package prescale) implements it.
type Prescaler interface {
	// ExpectedPods returns the pods to plan in addition to the real pending ones. It is called
	// once per batch with the cluster's current pods; an error skips pre-scaling for this batch
	// only.
	ExpectedPods(ctx context.Context, pods []*corev1.Pod) ([]*corev1.Pod, error)
}

// ExpectedPodsHolder is implemented by a Prescaler that remembers the expected pods it returned
// last. Housekeeping does not count a managed node as empty while a plan of those pods puts one
// on it: the node is kept for the forecast (forecast_keep.go), so capacity bought ahead stays
// while the forecast still wants it.
type ExpectedPodsHolder interface {
	// LastExpectedPods returns (copies of) the expected pods of the last ExpectedPods call.
	LastExpectedPods() []*corev1.Pod
}

// currentCatalog returns the catalog of this batch.
func (c *Controller) currentCatalog() *catalog.Catalog {
	if c.catalogSource != nil {
		if cat := c.catalogSource(); cat != nil {
			return cat
		}
	}
	return c.catalog
}

// Options are what a Controller is built from: its configuration and every dependency, so that
// a controller is complete once New returns.
type Options struct {
	// Config tunes the controller; it is validated by New.
	Config Config
	// Kube is the API server's client. Required.
	Kube kubernetes.Interface
	// Events, when set, is the client Events are written with: a clientset of its own (its own
	// client-side rate limit), so that a burst of Events (one TriggeredScaleUp per planned pod)
	// never queues ahead of a batch's writes. nil means Kube.
	Events kubernetes.Interface
	// Dynamic is the API server's client for the launch records (LaunchRecord objects,
	// LaunchRecordsResource), built from the same configuration as Kube. Required.
	Dynamic dynamic.Interface
	// Provider launches and deletes the cloud's instances. Required.
	Provider cloudprovider.Provider
	// Catalog is the catalog to buy from, prices applied. Required.
	Catalog *catalog.Catalog
	// CatalogSource, when set, supplies each batch's catalog (live prices from a
	// pricing.Refresher); a nil answer falls back to Catalog.
	CatalogSource func() *catalog.Catalog
	// Clock is the controller's time; nil means the real clock.
	Clock clock.WithTicker
	// Logger receives the controller's logs; nil means none.
	Logger *zap.Logger
	// Metrics are the controller's metrics; nil means metrics of its own, registered nowhere.
	Metrics *Metrics
	// Interruptions, when set, delivers the cloud's interruption notices (spot interruption
	// warnings, rebalance recommendations, state changes, GCP preemptions).
	Interruptions cloudprovider.InterruptionSource
	// Prescaler, when set, adds the pods forecasts expect to each batch (package prescale).
	Prescaler Prescaler
	// ProvisioningRequests, when set, reads the ProvisioningRequests each batch answers and writes
	// their conditions (prescale.ProvisioningRequests; provreq.go).
	ProvisioningRequests ProvisioningRequestSource
	// OnBatch, when set, is called at the end of every batch with the State it decided on and
	// its Result (whose Decision says what it decided), from the goroutine that ran the batch:
	// tests and tools watch the controller decide through it.
	OnBatch func(State, *Result)
	// DisruptionClock is the disruption loop's clock (its cadence, and the time its plans and
	// actions are made at); nil means Clock.
	DisruptionClock clock.WithTicker
	// OnDisruption, when set, is called at the end of every disruption pass that did something or
	// planned (Controller.Disrupt), from the loop's goroutine.
	OnDisruption func(*DisruptionPass)
}

// New builds a controller from opts.
func New(opts Options) (*Controller, error) {
	cfg := opts.Config
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("provisioner config: %w", err)
	}
	switch {
	case opts.Kube == nil:
		return nil, errors.New("provisioner: Options.Kube must be set")
	case opts.Dynamic == nil:
		return nil, errors.New("provisioner: Options.Dynamic (the launch records' client) must be set")
	case opts.Provider == nil:
		return nil, errors.New("provisioner: Options.Provider must be set")
	case opts.Catalog == nil:
		return nil, errors.New("provisioner: Options.Catalog must be set")
	}
	clk, log, metrics := opts.Clock, opts.Logger, opts.Metrics
	if clk == nil {
		clk = clock.RealClock{}
	}
	if log == nil {
		log = zap.NewNop()
	}
	if metrics == nil {
		metrics = NewMetrics(prometheus.NewRegistry())
	}
	dclk := opts.DisruptionClock
	if dclk == nil {
		dclk = clk
	}
	kube := opts.Kube
	broadcaster := record.NewBroadcaster()
	events := opts.Events
	if events == nil {
		events = kube
	}
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: events.CoreV1().Events("")})
	c := &Controller{
		cfg: cfg, kube: kube, provider: opts.Provider, clock: clk, log: log.Named("provisioner"), metrics: metrics,
		recorder:    broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "tiler"}),
		broadcaster: broadcaster,
		factory:     informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(stripManagedFields)),
		policyInf: informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(cfg.Namespace),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = api.LabelCostPolicy + "=true" }),
			informers.WithTransform(stripManagedFields)),
		catalog:       opts.Catalog,
		catalogSource: opts.CatalogSource,
		interruptions: opts.Interruptions,
		prescaler:     opts.Prescaler,
		onBatch:       opts.OnBatch,
		provreqs:      opts.ProvisioningRequests,
		dyn:           opts.Dynamic,
		records:       newRecordStore(opts.Dynamic, kube, cfg.Namespace, log.Named("provisioner")),
		unavailable:   cloudprovider.NewUnavailableOfferings(clk, cfg.UnavailableTTL),
		policyRV:      map[string]string{},
		memory:        NewMemory(),
		boot:          newBootTimes(),
		trigger:       make(chan struct{}, 1),
		arrival:       make(chan struct{}, 1),
		disruptWake:   make(chan struct{}, 1),
		dclock:        dclk,
		disruption:    newDisruptionMemory(cfg.DisruptionRescheduleGrace),
		onDisruption:  opts.OnDisruption,
		unplaceable:   newUnplaceableLimiter(cfg.UnplaceableEventInterval),
	}
	c.registerInformers()
	return c, nil
}

// registerInformers creates the informers the snapshot reads and hooks the batch trigger.
func (c *Controller) registerInformers() {
	poke := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.poke() },
		UpdateFunc: func(any, any) { c.poke() },
		DeleteFunc: func(any) { c.poke() },
	}
	f := c.factory
	registerSnapshotInformers(f)
	// A pod opens a batch when the scheduler marks it unschedulable; while the batch is open, a pod
	// that joins what the batch plans (a marked pod, or an unjudged one: Config.PlanUnjudgedWithin)
	// holds it open for another BatchIdle. Later updates of the same pods (the scheduler's retries,
	// Tiler's own tolerations and nominations) neither open a batch nor hold one open.
	_, _ = f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { c.podChanged(nil, o) },
		UpdateFunc: func(old, o any) { c.podChanged(old, o) },
		DeleteFunc: func(any) { c.poke() },
	})
	_, _ = f.Core().V1().Nodes().Informer().AddEventHandler(poke)
	// A namespace's labels (team selectors) and its quotas decide what a pending pod may get. A
	// quota's status changes with every pod of its namespace: it does not trigger a batch.
	_, _ = f.Core().V1().Namespaces().Informer().AddEventHandler(poke)
	_, _ = c.policyInf.Core().V1().ConfigMaps().Informer().AddEventHandler(poke)
	pods, nodes, slices := f.Core().V1().Pods().Informer(), f.Core().V1().Nodes().Informer(), f.Resource().V1().ResourceSlices().Informer()
	if c.cfg.Nominate {
		c.nominations = newNominationWatch(nominationDeps{kube: c.kube, pods: pods, nodes: nodes, slices: slices,
			records: c.records, clock: c.clock, log: c.log})
		c.nominations.register()
	}
	if c.cfg.Reserve {
		c.reservations = newReservationWatch(reservationDeps{kube: c.kube, pods: pods, nodes: nodes, records: c.records.List,
			clock: c.clock, log: c.log, recorder: c.recorder, ended: c.metrics.ReservationsEnded,
			ttl: c.cfg.ReservationTTL, recheck: c.cfg.ResyncPeriod})
		c.reservations.register()
	}
}

// registerSnapshotInformers creates in f the informers listCluster reads (PodGroups apart:
// watchPodGroups, after discovery).
func registerSnapshotInformers(f informers.SharedInformerFactory) {
	f.Core().V1().Pods().Informer()
	f.Core().V1().Nodes().Informer()
	f.Apps().V1().DaemonSets().Informer()
	f.Scheduling().V1().PriorityClasses().Informer()
	f.Resource().V1().ResourceClaims().Informer()
	f.Resource().V1().ResourceClaimTemplates().Informer()
	f.Resource().V1().ResourceSlices().Informer()
	f.Resource().V1().DeviceClasses().Informer()
	f.Policy().V1().PodDisruptionBudgets().Informer()
	f.Core().V1().Namespaces().Informer()
	f.Core().V1().ResourceQuotas().Informer()
}

// podChanged pokes the batch trigger when a pod becomes provisionable, and signals an arrival
// when it joins the pods a batch plans (plannable).
func (c *Controller) podChanged(old, o any) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	was, _ := old.(*corev1.Pod)
	if provisionable(p) && (was == nil || !provisionable(was)) {
		c.poke()
	}
	if !isPlaceholder(p) && c.plannable(p) && (was == nil || !c.plannable(was)) {
		select {
		case c.arrival <- struct{}{}:
		default:
		}
	}
}

// plannable reports whether a batch would plan the pod: it is provisionable, or unjudged when
// Config.PlanUnjudgedWithin allows planning those.
func (c *Controller) plannable(p *corev1.Pod) bool {
	return provisionable(p) || c.cfg.PlanUnjudgedWithin > 0 && unjudged(p)
}

// poke asks for a batch; pokes while one is pending coalesce.
func (c *Controller) poke() {
	select {
	case c.trigger <- struct{}{}:
	default:
	}
}

// Start starts the informers and waits for their caches.
func (c *Controller) Start(ctx context.Context) error {
	c.watchPodGroups()
	c.watchProvisioningRequests(ctx)
	c.factory.Start(ctx.Done())
	c.policyInf.Start(ctx.Done())
	for t, ok := range c.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer cache for %v did not sync", t)
		}
	}
	for t, ok := range c.policyInf.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer cache for %v did not sync", t)
		}
	}
	if err := c.records.start(ctx); err != nil {
		return err
	}
	if c.reservations != nil {
		c.reservations.start(ctx)
	}
	if c.nominations != nil {
		if err := c.nominations.start(ctx); err != nil {
			return err
		}
	}
	c.synced.Store(true)
	return nil
}

// Run starts the informers and reconciles in batches until ctx ends: a batch opens on the first
// poke and closes after BatchIdle without another, or after BatchMax; housekeeping also runs every
// ResyncPeriod. Interruption notices are polled in a loop of their own (watchInterruptions),
// disruption (consolidation) runs in a loop of its own too (runDisruption), and so does the
// instance sweep (runSweep). The batches do not wait for their launch calls (launches.go): a
// cloud API that hangs or throttles holds no batch.
// Run returns once every goroutine it started has ended (the loops, the launch calls, the
// informers and the Event broadcaster); a controller runs once.
func (c *Controller) Run(ctx context.Context) error {
	// Run's own context: whatever makes Run return (ctx ending, or an error such as a missing CRD
	// while ctx is still live) stops the informers and loops first, so the waits below end.
	ctx, cancel := context.WithCancel(ctx)
	var loops sync.WaitGroup
	defer func() {
		cancel()
		loops.Wait()
		c.launches.wg.Wait() // the calls end with ctx: providers honour it
		c.broadcaster.Shutdown()
		c.factory.Shutdown()
		c.policyInf.Shutdown()
	}()
	if err := c.Start(ctx); err != nil {
		return err
	}
	if err := c.recover(ctx, false); err != nil {
		c.log.Error("recovering launches", zap.Error(err))
	}
	if c.interruptions != nil {
		loops.Go(func() { c.watchInterruptions(ctx) })
	}
	loops.Go(func() { c.runDisruption(ctx) })
	if c.cfg.InstanceSweepPeriod > 0 {
		loops.Go(func() { c.runSweep(ctx) })
	}
	resync := c.clock.NewTicker(c.cfg.ResyncPeriod)
	defer resync.Stop()
	var gcTick <-chan time.Time
	if _, ok := c.provider.(cloudprovider.GarbageCollector); ok && c.cfg.GarbageCollectPeriod > 0 {
		t := c.clock.NewTicker(c.cfg.GarbageCollectPeriod)
		defer t.Stop()
		gcTick = t.C()
		c.CollectGarbage(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.trigger:
			c.waitForBatch(ctx)
		case <-resync.C():
		case <-gcTick:
			c.CollectGarbage(ctx)
			continue
		}
		if _, err := c.reconcile(ctx, false); err != nil && ctx.Err() == nil {
			c.log.Error("reconcile", zap.Error(err))
		}
	}
}

// CollectGarbage has the cloud provider delete what no launch needs any more, when it can
// (cloudprovider.GarbageCollector), and logs what went. Run calls it every GarbageCollectPeriod,
// on the leader only.
func (c *Controller) CollectGarbage(ctx context.Context) {
	gc, ok := c.provider.(cloudprovider.GarbageCollector)
	if !ok {
		return
	}
	deleted, err := gc.CollectGarbage(ctx)
	if len(deleted) > 0 {
		c.log.Info("deleted cloud objects no launch needs", zap.String("provider", c.provider.Name()), zap.Strings("deleted", deleted))
	}
	if err != nil && ctx.Err() == nil {
		c.log.Warn("collecting the cloud provider's garbage", zap.Error(err))
	}
}

// waitForBatch holds the batch open until BatchIdle passes without a pod arriving (podChanged), or
// BatchMax. Pokes meanwhile are taken: the batch has not observed the cluster yet, so it sees what
// they announce.
func (c *Controller) waitForBatch(ctx context.Context) {
	select {
	case <-c.arrival: // arrivals before the batch opened are in it already
	default:
	}
	deadline := c.clock.After(c.cfg.BatchMax)
	for {
		idle := c.clock.After(c.cfg.BatchIdle)
	wait:
		for {
			select {
			case <-ctx.Done():
				return
			case <-deadline:
				return
			case <-idle:
				return
			case <-c.trigger:
			case <-c.arrival:
				break wait
			}
		}
	}
}

// podLister and friends are small accessors over the informers.
func (c *Controller) pods() ([]*corev1.Pod, error) {
	return c.factory.Core().V1().Pods().Lister().List(labels.Everything())
}

func (c *Controller) nodes() ([]*corev1.Node, error) {
	return c.factory.Core().V1().Nodes().Lister().List(labels.Everything())
}
