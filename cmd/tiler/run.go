package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/tiler-dev/tiler/api/catalog"
	"github.com/tiler-dev/tiler/cloudprovider"
	awscloud "github.com/tiler-dev/tiler/cloudprovider/aws"
	gcpcloud "github.com/tiler-dev/tiler/cloudprovider/gcp"
	"github.com/tiler-dev/tiler/cloudprovider/sim"
	prom "github.com/tiler-dev/tiler/promsource"
	"github.com/tiler-dev/tiler/provisioner"
	"github.com/tiler-dev/tiler/provisioner/prescale"
)

func init() { register(newRunCmd) }

// runFlags are the flags of `tiler run` beyond the provisioner's Config. Every flag has an
// environment twin: TILER_ plus the flag name in upper case with dashes as underscores.
type runFlags struct {
	kubeconfig, cloud, simState, simImage, metricsAddr, logLevel, configFile, leaseNamespace string
	simBootDelay, simDeviceDelay, simStepInterval                                            time.Duration
	leaderElect, simRunPods                                                                  bool
	leaderTiming                                                                             leaderTiming
	region, endpoint, awsLaunchTemplate, gcpProject, gcpImage, gcpSubnetwork                 string
	awsSubnets                                                                               map[string]string
	awsQueueURL                                                                              string
	awsTemplateRetention                                                                     time.Duration
	// awsBootstrap is what the --aws-* node bootstrap flags set: when any is, Tiler manages the
	// launch templates (awscloud.NodeBootstrap) instead of using --aws-launch-template.
	awsBootstrap awscloud.NodeBootstrap
	// prometheusURL, when set, turns on forecast-driven pre-scaling; prescaleInterval is the least
	// time between two rounds of its Prometheus queries.
	prometheusURL    string
	prescaleInterval time.Duration
	// placeholders configures the placeholder pods of forecasts with placeholders: true.
	placeholderImage, placeholderClass string
	placeholderPriority                int32
	// kubeQPS and kubeBurst size the API client's client-side rate limit. client-go's defaults
	// (5 and 10) make a batch of a thousand pods wait minutes on its own writes.
	kubeQPS   float32
	kubeBurst int
}

func newRunCmd() *cobra.Command { return runCmd(runController) }

// runCmd is `tiler run` with its flags, handing the loaded configuration to run (tests pass their
// own run to get the configuration the flags make).
func runCmd(run func(context.Context, provisioner.Config, runFlags) error) *cobra.Command {
	v := viper.New()
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the provisioner controller against a cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, rf, err := loadRunConfig(v)
			if err != nil {
				return err
			}
			return run(cmd.Context(), cfg, rf)
		},
	}
	d := provisioner.DefaultConfig()
	f := cmd.Flags()
	f.String("config", "", "YAML file with any of these flags as keys")
	f.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then in-cluster)")
	f.String("cloud", "sim", "cloud provider: sim, aws or gcp")
	f.String("sim-state", "tiler-sim-cloud.json", "the simulated cloud's inventory file")
	f.Duration("sim-boot-delay", 3*time.Second, "simulated cloud: launch to Ready")
	f.Duration("sim-device-delay", 2*time.Second, "simulated cloud: Ready to GPUs published")
	f.Duration("sim-step-interval", sim.DefaultStepInterval, "simulated cloud: how often its nodes (and, with --sim-run-pods, their pods) advance")
	f.String("sim-image", "", "simulated cloud: the image its instances boot from (as an AMI); nodes booted from another are replaced as drifted, under the pools' budgets. Empty: images are not tracked")
	f.Bool("sim-run-pods", false, "simulated cloud: play the kubelet for pods too (bound pods turn Running and Ready, terminating pods end), so that PodDisruptionBudgets and evictions behave as in a cluster")
	f.String("region", "", "cloud region (aws: us-east-1, gcp: us-central1)")
	f.String("endpoint", "", "override the cloud API endpoint")
	f.String("aws-launch-template", "", "aws: a launch template of your own that bootstraps nodes from their tags (instead of the node bootstrap flags)")
	f.Duration("aws-template-retention", awscloud.DefaultTemplateRetention, "aws: delete a launch template Tiler created once no launch has used it this long")
	f.StringToString("aws-subnets", nil, "aws: zone=subnet-id pairs")
	f.String("aws-queue-url", "", "aws: SQS queue that EventBridge sends EC2 interruption events to")
	f.String("aws-eks-cluster", "", "aws node bootstrap: the EKS cluster's name (default --cluster-name)")
	f.String("aws-cluster-endpoint", "", "aws node bootstrap: the EKS API server URL (describe-cluster cluster.endpoint)")
	f.String("aws-cluster-ca", "", "aws node bootstrap: the cluster's base64 CA bundle (cluster.certificateAuthority.data)")
	f.String("aws-service-cidr", "", "aws node bootstrap: the cluster's service CIDR (cluster.kubernetesNetworkConfig.serviceIpv4Cidr)")
	f.String("aws-image-id", "", "aws node bootstrap: EKS-optimized Amazon Linux 2023 AMI of nodes: an AMI ID, or resolve:ssm:PARAMETER to follow the AMI an SSM parameter names (AWS's /aws/service/eks/optimized-ami/...), read every 10 min; nodes booted from another AMI are replaced as drifted")
	f.String("aws-gpu-image-id", "", "aws node bootstrap: AMI of GPU nodes, as --aws-image-id (default --aws-image-id)")
	f.String("aws-instance-profile", "", "aws node bootstrap: the nodes' IAM instance profile, name or ARN")
	f.StringSlice("aws-security-groups", nil, "aws node bootstrap: the nodes' security group IDs")
	f.String("gcp-project", "", "gcp: project ID")
	f.String("gcp-image", "projects/cos-cloud/global/images/family/cos-stable", "gcp: boot image, or an image family (…/images/family/NAME), read as the image it names now every 10 minutes: a new image in the family drifts the nodes")
	f.String("gcp-subnetwork", "", "gcp: subnetwork, e.g. regions/us-central1/subnetworks/default")
	f.String("metrics-addr", ":8080", "address of /metrics, /healthz and /readyz")
	f.String("log-level", "info", "debug, info, warn or error")
	f.Bool("leader-elect", false, "elect a leader through a Lease so that several replicas run safely")
	f.String("leader-election-namespace", d.Namespace, "namespace of the leader-election Lease")
	f.Duration("leader-election-lease-duration", defaultLeaderTiming.lease, "how long the leader-election Lease holds without renewal: a killed leader's standby takes over about this long (plus the retry period) after the last renewal")
	f.Duration("leader-election-renew-deadline", defaultLeaderTiming.renew, "how long the leader retries renewing the Lease before it stops leading")
	f.Duration("leader-election-retry-period", defaultLeaderTiming.retry, "how often replicas try to acquire or renew the Lease")
	f.String("cluster-name", d.ClusterName, "cluster name tagged on instances")
	f.String("namespace", d.Namespace, "namespace of cost-policy ConfigMaps and launch records")
	f.String("catalog", d.Catalog, "embedded catalog: "+strings.Join(catalog.EmbeddedNames(), ", "))
	f.Duration("batch-idle", d.BatchIdle, "close a batch after this long without new pods")
	f.Duration("batch-max", d.BatchMax, "close a batch after this long in any case")
	f.Duration("plan-unjudged-within", d.PlanUnjudgedWithin, "when a batch plans pods the scheduler found no place for, plan with them the pods it has not judged yet, created at most this long ago; 0: marked pods only")
	f.Duration("gpu-trigger-delay", d.GPUTriggerDelay, "let GPU pods wait this long before they trigger a purchase")
	f.Duration("registration-timeout", d.RegistrationTimeout, "delete an instance that is not a Ready node after this long")
	f.Duration("launch-retry", d.LaunchRetry, "wait before retrying a launch the cloud API failed without refusing it (throttled, 5xx); doubles with each failure")
	f.Duration("launch-retry-max", d.LaunchRetryMax, "longest wait between launch retries")
	f.Duration("unavailable-ttl", d.UnavailableTTL, "how long an unavailable offering stays out of plans")
	f.Duration("empty-node-ttl", d.EmptyNodeTTL, "remove a managed node that stayed empty this long")
	f.Bool("mig-relayout", d.MIGRelayout, "re-partition idle GPUs of existing MIG nodes (nvidia.com/mig.config) instead of buying; the GPU operator's MIG manager must know the mig-parted configs Tiler names")
	f.Bool("nominate", d.Nominate, "set status.nominatedNodeName on pods planned onto new nodes (off by default: --reserve keeps their room)")
	f.Bool("reserve", d.Reserve, "launch nodes with the taint tiler.dev/reserved that only the pods planned there tolerate, until they are bound")
	f.Duration("reservation-ttl", d.ReservationTTL, "end a node's reservation once it has been Ready this long")
	f.Duration("provisioning-request-booking-time", d.BookingTime, "hold the room of a provisioned ProvisioningRequest this long for its pods (then BookingExpired)")
	f.Duration("resync-period", d.ResyncPeriod, "housekeeping interval")
	f.Duration("unplaceable-event-interval", d.UnplaceableEventInterval, "tell a pending pod Tiler has no place for why (a NotTriggerScaleUp Event) at most this often; 0: never")
	f.Duration("garbage-collect-period", d.GarbageCollectPeriod, "how often the cloud's objects no launch needs (unused launch templates) are deleted; 0 turns it off")
	f.Duration("instance-sweep-period", d.InstanceSweepPeriod, "how often launches whose instance the cloud ended are removed, and instances no launch names are deleted; 0 turns it off (done at every start regardless)")
	f.Duration("image-probation", d.ImageProbation, "pause every roll onto a node image this long after a launch from it did not register or a node booted from it showed a health signal this young; 0: pause only while such a node shows it")
	f.Duration("disruption-interval", d.DisruptionInterval, "how often consolidation is planned (pools' disruption settings in the cost policy); 0 turns it off")
	f.Duration("disruption-step-interval", d.DisruptionStepInterval, "how often the disruption actions under way advance (evictions retried, nodes deleted)")
	f.Duration("disruption-drain-timeout", d.DisruptionDrainTimeout, "abandon a disruption action, and uncordon its nodes, when its drain is refused this long")
	f.Duration("disruption-reschedule-grace", d.DisruptionRescheduleGrace, "how long pods a disruption evicted may stay pending before a batch buys for them")
	f.Bool("disruption-candidate-taint", d.DisruptionCandidateTaint, "keep the taint tiler.dev/disruption-candidate:PreferNoSchedule on the nodes consolidation would remove and on drifted or expired nodes waiting their turn, so that kube-scheduler puts pods elsewhere when it can")
	f.Duration("interruption-drain-margin", d.InterruptionDrainMargin, "evict an interrupted node's pods this long before the cloud reclaims it when its replacement is not Ready yet")
	f.String("prometheus-url", "", "Prometheus base URL; when set, the forecasts of the cost policy buy capacity ahead of load")
	f.Duration("prescale-interval", prescale.DefaultInterval, "query Prometheus for the forecasts, and size the CapacityBuffers, at most this often")
	f.String("placeholder-image", prescale.DefaultPlaceholderImage, "image of the placeholder pods that hold the capacity bought for a forecast (forecasts with placeholders: true)")
	f.String("placeholder-priority-class", prescale.DefaultPlaceholderPriorityClass, "PriorityClass of the placeholder pods, created when missing")
	f.Float32("kube-api-qps", DefaultKubeQPS, "API client: requests per second before client-side throttling")
	f.Int("kube-api-burst", DefaultKubeBurst, "API client: burst above --kube-api-qps")
	f.Int32("placeholder-priority", prescale.DefaultPlaceholderPriority, "value of the placeholder PriorityClass when Tiler creates it; must be below every real workload's priority")
	_ = v.BindPFlags(f)
	v.SetEnvPrefix("TILER")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	return cmd
}

func loadRunConfig(v *viper.Viper) (provisioner.Config, runFlags, error) {
	if file := v.GetString("config"); file != "" {
		v.SetConfigFile(file)
		if err := v.ReadInConfig(); err != nil {
			return provisioner.Config{}, runFlags{}, fmt.Errorf("reading --config %s: %w", file, err)
		}
	}
	cfg := provisioner.DefaultConfig()
	if err := v.Unmarshal(&cfg); err != nil {
		return cfg, runFlags{}, fmt.Errorf("config: %w", err)
	}
	rf := runFlags{kubeconfig: v.GetString("kubeconfig"), cloud: v.GetString("cloud"), simState: v.GetString("sim-state"),
		metricsAddr: v.GetString("metrics-addr"), logLevel: v.GetString("log-level"), leaderElect: v.GetBool("leader-elect"),
		leaseNamespace: v.GetString("leader-election-namespace"),
		leaderTiming: leaderTiming{lease: v.GetDuration("leader-election-lease-duration"), renew: v.GetDuration("leader-election-renew-deadline"),
			retry: v.GetDuration("leader-election-retry-period")}, simBootDelay: v.GetDuration("sim-boot-delay"),
		simDeviceDelay:  v.GetDuration("sim-device-delay"),
		simStepInterval: v.GetDuration("sim-step-interval"), simRunPods: v.GetBool("sim-run-pods"), simImage: v.GetString("sim-image"), region: v.GetString("region"), endpoint: v.GetString("endpoint"),
		awsLaunchTemplate: v.GetString("aws-launch-template"), awsQueueURL: v.GetString("aws-queue-url"), awsSubnets: v.GetStringMapString("aws-subnets"),
		gcpProject: v.GetString("gcp-project"), gcpImage: v.GetString("gcp-image"), gcpSubnetwork: v.GetString("gcp-subnetwork"),
		prometheusURL: v.GetString("prometheus-url"), prescaleInterval: v.GetDuration("prescale-interval"),
		placeholderImage: v.GetString("placeholder-image"), placeholderClass: v.GetString("placeholder-priority-class"),
		placeholderPriority: v.GetInt32("placeholder-priority"), kubeQPS: float32(v.GetFloat64("kube-api-qps")), kubeBurst: v.GetInt("kube-api-burst"), awsTemplateRetention: v.GetDuration("aws-template-retention"),
		awsBootstrap: awscloud.NodeBootstrap{ClusterName: v.GetString("aws-eks-cluster"), APIServerEndpoint: v.GetString("aws-cluster-endpoint"),
			CertificateAuthority: v.GetString("aws-cluster-ca"), ServiceCIDR: v.GetString("aws-service-cidr"),
			ImageID: v.GetString("aws-image-id"), GPUImageID: v.GetString("aws-gpu-image-id"),
			InstanceProfile: v.GetString("aws-instance-profile"), SecurityGroupIDs: v.GetStringSlice("aws-security-groups")}}
	if rf.prescaleInterval <= 0 {
		return cfg, rf, fmt.Errorf("--prescale-interval %s: must be positive", rf.prescaleInterval)
	}
	if !(rf.kubeQPS > 0) || math.IsInf(float64(rf.kubeQPS), 0) {
		return cfg, rf, fmt.Errorf("--kube-api-qps %v: must be a positive number", rf.kubeQPS)
	}
	if err := rf.leaderTiming.validate(); err != nil {
		return cfg, rf, err
	}
	if rf.simStepInterval <= 0 {
		return cfg, rf, fmt.Errorf("--sim-step-interval %s: must be positive", rf.simStepInterval)
	}
	if rf.kubeBurst < 1 {
		return cfg, rf, fmt.Errorf("--kube-api-burst %d: must be at least 1", rf.kubeBurst)
	}
	if rf.awsTemplateRetention <= 0 {
		return cfg, rf, fmt.Errorf("--aws-template-retention %s: must be positive", rf.awsTemplateRetention)
	}
	return cfg, rf, cfg.Validate()
}

func runController(ctx context.Context, cfg provisioner.Config, rf runFlags) error {
	log, err := newLogger(rf.logLevel)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	return runControllerWithLogger(ctx, cfg, rf, log)
}

// runControllerWithLogger is runController with the logger given (tests observe it).
func runControllerWithLogger(ctx context.Context, cfg provisioner.Config, rf runFlags, log *zap.Logger) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	rt, err := newRuntime(ctx, cfg, rf, log)
	if err != nil {
		return err
	}
	ready := &readiness{synced: rt.ctrl.Synced, lease: rf.leaderTiming.lease}
	go serveHTTP(ctx, rf.metricsAddr, rt.registry, ready, log)
	if rt.runCloud != nil {
		go func() { _ = rt.runCloud(ctx) }()
	}
	run := func(ctx context.Context) error {
		ready.set(true)
		log.Info("controller starting: waiting for the informer caches to sync", zap.String("cloud", rt.provider.Name()), zap.String("catalog", rt.catalog.Name))
		go reportSync(ctx, rt.ctrl.Synced, rt.kube, log)
		err := rt.ctrl.Run(ctx)
		if ctx.Err() != nil {
			return nil // stopped (a signal) while the caches were syncing: not a failure
		}
		return err
	}
	if rf.leaderElect {
		return runWithLeaderElection(ctx, rt.kube, rf.leaseNamespace, rf.leaderTiming, run, log, ready)
	}
	return run(ctx)
}

// newPrescaler builds the forecast-driven pre-scaler over the Prometheus at --prometheus-url.
func newPrescaler(rf runFlags, cfg provisioner.Config, cat *catalog.Catalog, kube kubernetes.Interface, clk clock.PassiveClock,
	log *zap.Logger, reg prometheus.Registerer) (*prescale.ForecastPrescaler, error) {
	client, err := prom.New(prom.Config{Address: rf.prometheusURL})
	if err != nil {
		return nil, fmt.Errorf("--prometheus-url: %w", err)
	}
	ps, err := prescale.New(prescale.Config{Namespace: cfg.Namespace, Interval: rf.prescaleInterval, Catalog: cat,
		PlaceholderImage: rf.placeholderImage, PlaceholderPriorityClass: rf.placeholderClass, PlaceholderPriority: &rf.placeholderPriority},
		kube, client, clk, log, nil, reg)
	if err != nil {
		return nil, fmt.Errorf("forecast pre-scaler: %w", err)
	}
	log.Info("forecast pre-scaling on", zap.String("prometheus", rf.prometheusURL), zap.Duration("interval", rf.prescaleInterval))
	return ps, nil
}

// DefaultKubeQPS and DefaultKubeBurst are the API client's rate limit unless flags say otherwise:
// Karpenter's defaults (KUBE_CLIENT_QPS 200, KUBE_CLIENT_BURST 300), which the API server's own
// priority and fairness bounds.
const (
	DefaultKubeQPS   = 200
	DefaultKubeBurst = 300
)

// restConfig is the API client's configuration: --kubeconfig, then $KUBECONFIG, then in-cluster,
// with the rate limit of --kube-api-qps and --kube-api-burst.
func restConfig(rf runFlags) (*rest.Config, error) {
	c, err := loadRESTConfig(rf.kubeconfig)
	if err != nil {
		return nil, err
	}
	c.QPS, c.Burst = rf.kubeQPS, rf.kubeBurst
	return c, nil
}

func loadRESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		kubeconfig = os.Getenv("KUBECONFIG")
	}
	if kubeconfig == "" {
		if c, err := rest.InClusterConfig(); err == nil {
			return c, nil
		}
		return nil, errors.New("no --kubeconfig, no $KUBECONFIG and not in a cluster")
	}
	return clientcmd.BuildConfigFromFlags("", kubeconfig)
}

func newLogger(level string) (*zap.Logger, error) {
	c := zap.NewProductionConfig()
	if err := c.Level.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	return c.Build()
}

// readiness is what /readyz answers. Leadership is not readiness: a replica is ready when it can
// do its part. The leader (or the one replica without --leader-elect) runs the controller: it is
// ready once its informer caches have synced (synced, when set) — before, it knows nothing of the
// cluster (an unreachable API server keeps it so). A standby only waits for the Lease: it is
// ready while the API server answered one of its Lease calls within the lease duration, so that it
// could take over; a standby cut off from the API server is not. A standby that failed its
// readiness probe would stall every rolling update of a two-replica Deployment, which waits for a
// new pod to be Ready before it stops an old one.
type readiness struct {
	leading atomicBool
	synced  func() bool
	// lastLease is the time (UnixNano) of the last Lease call the API server answered; 0: none.
	lastLease atomic.Int64
	// now is the clock of the standby's check (time.Now unless a test sets it).
	now func() time.Time
	// lease is the Lease duration (--leader-election-lease-duration); 0: the default.
	lease time.Duration
}

// leaseWindow is how old a standby's last answered Lease call may be for it to be ready.
func (r *readiness) leaseWindow() time.Duration {
	if r.lease > 0 {
		return r.lease
	}
	return defaultLeaderTiming.lease
}

func (r *readiness) set(leading bool) { r.leading.Store(leading) }

// leaseSeen records a Lease call the API server answered.
func (r *readiness) leaseSeen() { r.lastLease.Store(r.clock().UnixNano()) }

func (r *readiness) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

func (r *readiness) ready() bool {
	if r.leading.Load() {
		return r.synced == nil || r.synced()
	}
	last := r.lastLease.Load()
	return last != 0 && r.clock().Sub(time.Unix(0, last)) < r.leaseWindow()
}

// syncWarnAfter and syncWarnEvery pace reportSync's warnings (variables so that tests need not
// wait).
var (
	syncWarnAfter = 5 * time.Second
	syncWarnEvery = 30 * time.Second
)

// reportSync logs, while the informer caches have not synced, why: after syncWarnAfter and then
// every syncWarnEvery it lists one pod from the API server and logs the error that call gets
// (connection refused, TLS, forbidden) — the informers retry silently. It logs "controller
// running" once synced.
func reportSync(ctx context.Context, synced func() bool, kube kubernetes.Interface, log *zap.Logger) {
	start := time.Now()
	warn := time.NewTimer(syncWarnAfter)
	defer warn.Stop()
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
			if synced() {
				log.Info("controller running: informer caches synced", zap.Duration("after", time.Since(start).Round(time.Millisecond)))
				return
			}
		case <-warn.C:
			probe, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := kube.CoreV1().Pods("").List(probe, metav1.ListOptions{Limit: 1})
			cancel()
			if err == nil {
				err = errors.New("the API server answers, the caches are still loading")
			}
			log.Warn("not ready: informer caches have not synced; /readyz answers 503",
				zap.Duration("waiting", time.Since(start).Round(time.Second)), zap.Error(err))
			warn.Reset(syncWarnEvery)
		}
	}
}

func serveHTTP(ctx context.Context, addr string, reg *prometheus.Registry, ready *readiness, log *zap.Logger) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.ready() {
			http.Error(w, "leading and the informer caches have not synced, or standing by without an answer from the API server to a Lease call for "+ready.leaseWindow().String(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("metrics server", zap.Error(err))
	}
}

// interruptionSource returns the cloud's interruption notices: the simulated cloud's own, AWS's
// SQS queue (when --aws-queue-url is set) or GCP's preemption operations.
func interruptionSource(ctx context.Context, rf runFlags, provider cloudprovider.Provider) (cloudprovider.InterruptionSource, error) {
	switch p := provider.(type) {
	case *sim.Provider:
		return p.Interruptions(), nil
	case *gcpcloud.Provider:
		return p.Preemptions(10 * time.Minute), nil
	}
	if rf.cloud == "aws" && rf.awsQueueURL != "" {
		return awscloud.NewInterruptionSource(ctx, awscloud.Config{Region: awsRegion(rf), Endpoint: rf.endpoint, QueueURL: rf.awsQueueURL})
	}
	return nil, nil
}
