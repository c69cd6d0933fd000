package provisioner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/tiler-dev/tiler/api"

	"go.uber.org/zap"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
)

// LaunchRecord is the durable record of one planned node, written before the cloud is called.
// Its offering (InstanceType, Zone, CapacityType), PricePerHour, Labels and GPUs are the plan's
// until the cloud launched the node, and then those of what the cloud launched, which may be one
// of the Fallbacks: in-flight accounting and housekeeping count what was really bought.
type LaunchRecord struct {
	// LaunchID is the planned node name, the name the launch asks the cloud for; launches are
	// idempotent on it.
	LaunchID string `json:"launchID"`
	// NodeName is the name of the node's Node: the planned name until the Node registers under
	// another (an EKS node registers as its EC2 private DNS name), then that one (see nodeIndex).
	NodeName string `json:"nodeName"`
	Pool     string `json:"pool"`
	// PricedOffering is what the node is bought as: the plan's offering until the cloud
	// launched it, then what the cloud launched.
	api.PricedOffering
	GPUs   int               `json:"gpus,omitempty"`
	Pods   []string          `json:"pods,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	Taints []corev1.Taint    `json:"taints,omitempty"`
	// GPU is the plan's GPU configuration of the node (nil without GPUs): what its bootstrap
	// applies and what the simulation counts while it is in flight.
	GPU *api.GPUConfig `json:"gpu,omitempty"`
	// Fallbacks are the plan's fallback offerings, tried in order when the cloud refuses the
	// node's own.
	Fallbacks []api.PricedOffering `json:"fallbacks,omitempty"`
	// Claims are the DRA devices the plan allocated to the pods' claims on the node
	// (api.NewNode.Claims): while the node is in flight, a re-plan gives the pods put back there
	// the same devices (simulator.InFlightNode.Claims).
	Claims    []api.ClaimAllocation `json:"claims,omitempty"`
	CreatedAt time.Time             `json:"createdAt"`
	// PoolHash is policy.PoolHash of the node's pool when the launch was planned; the controller
	// sets it on the Node as tiler.dev/pool-hash once it is Ready, so that a later change of the
	// pool's labels, taints or GPU settings is seen as drift.
	PoolHash string `json:"poolHash,omitempty"`
	// InstanceID is set once the cloud accepted the launch.
	InstanceID string `json:"instanceID,omitempty"`
	// Image is the image the instance boots from, as its provider names it (Instance.Image), once
	// the cloud accepted the launch; empty when the provider does not say. A node whose image is
	// not the one its provider launches now (cloudprovider.ImageChooser) is drifted.
	Image string `json:"image,omitempty"`
	// Settings digests the instance's other launch settings (Instance.Settings), as Image; a node
	// launched with other settings than a launch now gets (cloudprovider.SettingsChooser) is
	// drifted.
	Settings string `json:"settings,omitempty"`
	// ReadyAt is when the controller first saw the node Ready (zero until then, and in records
	// written before it was kept). From then on the launch is no longer in flight: a node that
	// stops being Ready is repair's (repair.notReadyGracePeriod, replacement first), never the
	// registration timeout's, and one whose Node is gone is removed as RemovalNodeGone.
	ReadyAt time.Time `json:"readyAt,omitzero"`
	// LaunchAttempts counts the launch calls the cloud API failed without refusing the launch
	// (throttled, 5xx, unreachable). The cloud may have launched the node, so the record stays,
	// its pods count it in flight, and the launch is retried with the same launch ID at RetryAt.
	LaunchAttempts int `json:"launchAttempts,omitempty"`
	// LastError is the last of those failures.
	LastError string `json:"lastError,omitempty"`
	// RetryAt is when the next attempt is due.
	RetryAt time.Time `json:"retryAt,omitzero"`
	// DisruptionAction is the ID of the disruption action this node replaces nodes for (empty for
	// a purchase). A replacement is launched without a node reservation: the pods it takes are
	// recreated under new names once the old nodes are drained.
	DisruptionAction string `json:"disruptionAction,omitempty"`
	// Batch is the batch that planned the node (Decision.Batch; empty in records written before
	// it was kept): the nodes of one batch keep their reservations until every pod the batch
	// planned is bound (reserve.go, holdForPlanned).
	Batch string `json:"batch,omitempty"`
}

// UnmarshalJSON reads a record, including one written before the GPU configuration was kept
// once: those held it twice, as "plan" (the simulator's, complete) and as "gpu" (the cloud's,
// in another encoding), and "gpu" with zero values on nodes without GPUs.
func (r *LaunchRecord) UnmarshalJSON(b []byte) error {
	type plain LaunchRecord
	var v struct {
		plain
		LegacyPlan *api.GPUConfig `json:"plan"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = LaunchRecord(v.plain)
	if v.LegacyPlan != nil {
		r.GPU = v.LegacyPlan
	}
	if r.GPU != nil && r.GPU.Equal(api.GPUConfig{}) {
		r.GPU = nil
	}
	return nil
}

// LaunchRecordsCRD names the CustomResourceDefinition of the launch records
// (deploy/crds/tiler.dev_launchrecords.yaml), which must be installed before the controller starts.
const LaunchRecordsCRD = "launchrecords.tiler.dev"

// LaunchRecordsResource is the API resource of the launch records: one LaunchRecord object per
// launch in Config.Namespace, named by its launch ID.
var LaunchRecordsResource = schema.GroupVersionResource{Group: "tiler.dev", Version: "v1alpha1", Resource: "launchrecords"}

// statusFields are the record's fields kept under status: what happened to the launch. The rest,
// the planned (then bought) node, is its spec.
var statusFields = []string{"nodeName", "instanceID", "image", "settings", "readyAt", "launchAttempts", "lastError", "retryAt"}

// RecordObject returns the LaunchRecord object of r in namespace.
func RecordObject(r LaunchRecord, namespace string) (*unstructured.Unstructured, error) {
	spec, status, err := recordFields(r)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": spec, "status": status}}
	obj.SetAPIVersion(LaunchRecordsResource.GroupVersion().String())
	obj.SetKind("LaunchRecord")
	obj.SetNamespace(namespace)
	obj.SetName(r.LaunchID)
	return obj, nil
}

// recordFields splits r into the spec and status of its object.
func recordFields(r LaunchRecord) (spec, status map[string]any, err error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, nil, fmt.Errorf("launch record %s: %w", r.LaunchID, err)
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		return nil, nil, fmt.Errorf("launch record %s: %w", r.LaunchID, err)
	}
	delete(spec, "launchID")
	status = map[string]any{}
	for _, f := range statusFields {
		if v, ok := spec[f]; ok {
			status[f] = v
			delete(spec, f)
		}
	}
	return spec, status, nil
}

// RecordFromObject reads the launch record of a LaunchRecord object.
func RecordFromObject(obj *unstructured.Unstructured) (LaunchRecord, error) {
	fields := map[string]any{}
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	status, _, _ := unstructured.NestedMap(obj.Object, "status")
	maps.Copy(fields, spec)
	for _, f := range statusFields {
		if v, ok := status[f]; ok {
			fields[f] = v
		}
	}
	fields["launchID"] = obj.GetName()
	var r LaunchRecord
	b, err := json.Marshal(fields)
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		return LaunchRecord{}, fmt.Errorf("launch record %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return r, nil
}

// ListRecords reads the launch records of namespace from the API server, sorted by launch ID
// (for tools and tests; the controller reads its informer's cache).
func ListRecords(ctx context.Context, client dynamic.Interface, namespace string) ([]LaunchRecord, error) {
	list, err := client.Resource(LaunchRecordsResource).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing launch records: %w", crdMissing(err))
	}
	out := make([]LaunchRecord, 0, len(list.Items))
	for i := range list.Items {
		r, err := RecordFromObject(&list.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LaunchID < out[j].LaunchID })
	return out, nil
}

// crdMissing turns the API server's 404 for the launch records' resource into an error naming
// the CustomResourceDefinition to install.
func crdMissing(err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("the CustomResourceDefinition %s is not installed (kubectl apply -f deploy/crds/): %w", LaunchRecordsCRD, err)
	}
	return err
}

// recordWorkers bounds the writes of one Put in flight at once.
const recordWorkers = 16

// recordStore keeps the launch records, one LaunchRecord object per launch in the controller's
// namespace. Reads come from an informer's cache, overlaid with the store's own writes that the
// informer has not delivered yet, so that a batch always sees the records the previous one
// wrote. Each new launch is one create; later changes are merge patches of that launch's object
// only, carrying the resourceVersion they were computed from (optimistic concurrency) and retried
// on conflict; deletes are per launch. Launches never contend for a shared object.
type recordStore struct {
	client    dynamic.NamespaceableResourceInterface
	kube      kubernetes.Interface // migration from the ConfigMap of earlier versions
	namespace string
	log       *zap.Logger
	factory   dynamicinformer.DynamicSharedInformerFactory
	informer  cache.SharedIndexInformer

	mu sync.Mutex
	// written holds the objects this store wrote, until the informer delivers them or newer.
	written map[string]*unstructured.Unstructured
	// deleted holds the names this store deleted, until the informer delivers the deletion.
	deleted map[string]bool

	decodedMu sync.Mutex
	// decoded memoises RecordFromObject per object name and version: List runs on every pass of
	// the reservation release loop, which during a burst of binds runs back to back, and decoding
	// every record each time (a JSON round trip per record) took a seventh of the process's CPU
	// in a 1,000-pod burst.
	decoded map[string]decodedRecord
}

// decodedRecord is a record decoded from the object of that UID and resourceVersion.
type decodedRecord struct {
	uid types.UID
	rv  string
	rec LaunchRecord
}

func newRecordStore(client dynamic.Interface, kube kubernetes.Interface, namespace string, log *zap.Logger) *recordStore {
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, namespace, nil)
	s := &recordStore{
		client: client.Resource(LaunchRecordsResource), kube: kube, namespace: namespace, log: log,
		factory: factory, informer: factory.ForResource(LaunchRecordsResource).Informer(),
		written: map[string]*unstructured.Unstructured{}, deleted: map[string]bool{},
		decoded: map[string]decodedRecord{},
	}
	_, _ = s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.observed,
		UpdateFunc: func(_, o any) { s.observed(o) },
		DeleteFunc: func(o any) {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if u, ok := o.(*unstructured.Unstructured); ok {
				s.mu.Lock()
				delete(s.deleted, u.GetName())
				delete(s.written, u.GetName())
				s.mu.Unlock()
			}
		},
	})
	return s
}

// observed drops the store's own copy of an object once the informer has it, or a newer one.
func (s *recordStore) observed(o any) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.written[u.GetName()]; w != nil && !newer(w, u) {
		delete(s.written, u.GetName())
	}
}

// newer reports whether a is a later version of the object than b. Resource versions are opaque,
// but the API server's (etcd's revisions) are increasing integers.
func newer(a, b *unstructured.Unstructured) bool {
	ra, erra := strconv.ParseUint(a.GetResourceVersion(), 10, 64)
	rb, errb := strconv.ParseUint(b.GetResourceVersion(), 10, 64)
	if erra != nil || errb != nil {
		// Not the API server's (a fake's, which keeps none): the store's own write wins.
		return a.GetResourceVersion() != b.GetResourceVersion() || a.GetResourceVersion() == ""
	}
	return ra > rb
}

// onChange calls f after every change of the records the informer delivers.
func (s *recordStore) onChange(f func()) {
	_, _ = s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { f() },
		UpdateFunc: func(any, any) { f() },
		DeleteFunc: func(any) { f() },
	})
}

// start checks that the CustomResourceDefinition is installed, migrates the records of the
// ConfigMap of earlier versions, starts the informer and waits for its cache.
func (s *recordStore) start(ctx context.Context) error {
	if _, err := s.client.Namespace(s.namespace).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("launch records: %w", crdMissing(err))
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}
	s.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.informer.HasSynced) {
		return errors.New("informer cache for launch records did not sync")
	}
	return nil
}

// synced reports whether the informer has listed the records.
func (s *recordStore) synced() bool { return s.informer.HasSynced() }

// current returns the object of a launch as last known: the store's own write, or the informer's.
func (s *recordStore) current(name string) *unstructured.Unstructured {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deleted[name] {
		return nil
	}
	o, ok, _ := s.informer.GetStore().GetByKey(s.namespace + "/" + name)
	u, _ := o.(*unstructured.Unstructured)
	if w := s.written[name]; w != nil && (!ok || u == nil || newer(w, u)) {
		return w
	}
	if !ok {
		return nil
	}
	return u
}

// List returns the records sorted by launch ID, from the cache.
func (s *recordStore) List(context.Context) ([]LaunchRecord, error) {
	s.mu.Lock()
	objs := map[string]*unstructured.Unstructured{}
	for _, o := range s.informer.GetStore().List() {
		if u, ok := o.(*unstructured.Unstructured); ok && u.GetNamespace() == s.namespace && !s.deleted[u.GetName()] {
			objs[u.GetName()] = u
		}
	}
	for name, w := range s.written {
		if u := objs[name]; u == nil || newer(w, u) {
			objs[name] = w
		}
	}
	s.mu.Unlock()
	out := make([]LaunchRecord, 0, len(objs))
	s.decodedMu.Lock()
	defer s.decodedMu.Unlock()
	for name, u := range objs {
		rv := u.GetResourceVersion()
		if d, ok := s.decoded[name]; ok && rv != "" && d.rv == rv && d.uid == u.GetUID() {
			out = append(out, d.rec.clone())
			continue
		}
		r, err := RecordFromObject(u)
		if err != nil {
			return nil, err
		}
		if rv != "" {
			s.decoded[name] = decodedRecord{uid: u.GetUID(), rv: rv, rec: r.clone()}
		}
		out = append(out, r)
	}
	for name := range s.decoded {
		if objs[name] == nil {
			delete(s.decoded, name)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LaunchID < out[j].LaunchID })
	return out, nil
}

// clone returns a copy of r that shares no slice, map or pointer with it.
func (r LaunchRecord) clone() LaunchRecord {
	r.Pods = slices.Clone(r.Pods)
	r.Labels = maps.Clone(r.Labels)
	if r.Taints != nil {
		taints := make([]corev1.Taint, len(r.Taints))
		for i := range r.Taints {
			r.Taints[i].DeepCopyInto(&taints[i])
		}
		r.Taints = taints
	}
	if r.GPU != nil {
		g := *r.GPU
		if g.MIGLayout != nil {
			g.MIGLayout = make([][]string, len(r.GPU.MIGLayout))
			for i, l := range r.GPU.MIGLayout {
				g.MIGLayout[i] = slices.Clone(l)
			}
		}
		r.GPU = &g
	}
	r.Fallbacks = slices.Clone(r.Fallbacks)
	if r.Claims != nil {
		claims := make([]api.ClaimAllocation, len(r.Claims))
		for i, c := range r.Claims {
			claims[i] = api.ClaimAllocation{Claim: c.Claim, Devices: slices.Clone(c.Devices)}
		}
		r.Claims = claims
	}
	return r
}

// remember keeps the store's own write until the informer delivers it.
func (s *recordStore) remember(u *unstructured.Unstructured) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.deleted, u.GetName())
	if w := s.written[u.GetName()]; w == nil || newer(u, w) {
		s.written[u.GetName()] = u
	}
}

// Put writes records: a create for a launch without an object, a merge patch of what changed for
// one with. Records are written in parallel; the first error is returned once all are tried.
func (s *recordStore) Put(ctx context.Context, recs ...LaunchRecord) error {
	errs := make([]error, len(recs))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(recordWorkers, len(recs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				errs[i] = s.put(ctx, recs[i])
			}
		}()
	}
	for i := range recs {
		work <- i
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("writing launch records: %w", err)
	}
	return nil
}

func (s *recordStore) put(ctx context.Context, r LaunchRecord) error {
	want, err := RecordObject(r, s.namespace)
	if err != nil {
		return err
	}
	cur := s.current(r.LaunchID)
	if cur == nil {
		got, err := s.client.Namespace(s.namespace).Create(ctx, want, metav1.CreateOptions{})
		if err == nil {
			s.remember(got)
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating launch record %s: %w", r.LaunchID, crdMissing(err))
		}
		if cur, err = s.client.Namespace(s.namespace).Get(ctx, r.LaunchID, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("reading launch record %s: %w", r.LaunchID, err)
		}
	}
	return s.patch(ctx, r.LaunchID, cur, func(*unstructured.Unstructured) (*unstructured.Unstructured, error) { return want, nil })
}

// patch writes the change from cur to what modify returns for it as a JSON merge patch carrying
// cur's resourceVersion; on a conflict it reads the object again and retries. modify returning
// nil writes nothing; so does an unchanged object. A record that is gone stays gone.
func (s *recordStore) patch(ctx context.Context, name string, cur *unstructured.Unstructured,
	modify func(*unstructured.Unstructured) (*unstructured.Unstructured, error)) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if cur == nil {
			var err error
			if cur, err = s.client.Namespace(s.namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		want, err := modify(cur)
		if err != nil || want == nil {
			return err
		}
		before, err := json.Marshal(map[string]any{"spec": cur.Object["spec"], "status": cur.Object["status"]})
		if err != nil {
			return err
		}
		after, err := json.Marshal(map[string]any{"spec": want.Object["spec"], "status": want.Object["status"]})
		if err != nil {
			return err
		}
		diff, err := jsonpatch.CreateMergePatch(before, after)
		if err != nil {
			return err
		}
		if string(diff) == "{}" {
			return nil
		}
		var p map[string]any
		if err := json.Unmarshal(diff, &p); err != nil {
			return err
		}
		p["metadata"] = map[string]any{"resourceVersion": cur.GetResourceVersion()}
		body, err := json.Marshal(p)
		if err != nil {
			return err
		}
		got, err := s.client.Namespace(s.namespace).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
		if err != nil {
			cur = nil // read it again before retrying
			return err
		}
		s.remember(got)
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("patching launch record %s: %w", name, err)
	}
	return nil
}

// SetNodeNames sets the NodeName of the records named by launch ID (launch ID → node name), one
// patch of its status per record; a record that is gone stays gone.
func (s *recordStore) SetNodeNames(ctx context.Context, names map[string]string) error {
	var errs []error
	for id, name := range names {
		errs = append(errs, s.setStatus(ctx, id, "nodeName", name))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("writing launch records: %w", err)
	}
	return nil
}

// SetReadyAt sets the ReadyAt of the record named by launchID, with a patch of its status; a
// record that is gone stays gone.
func (s *recordStore) SetReadyAt(ctx context.Context, launchID string, at time.Time) error {
	if err := s.setStatus(ctx, launchID, "readyAt", at.UTC().Format(time.RFC3339)); err != nil {
		return fmt.Errorf("writing launch records: %w", err)
	}
	return nil
}

// setStatus sets one status field of the record named by launchID (nothing when the store has no
// such record).
func (s *recordStore) setStatus(ctx context.Context, launchID, field string, value any) error {
	cur := s.current(launchID)
	if cur == nil {
		return nil
	}
	return s.patch(ctx, launchID, cur, func(cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		want := cur.DeepCopy()
		if err := unstructured.SetNestedField(want.Object, value, "status", field); err != nil {
			return nil, err
		}
		return want, nil
	})
}

// Delete removes records; one that is already gone is no error.
func (s *recordStore) Delete(ctx context.Context, launchIDs ...string) error {
	var errs []error
	for _, id := range launchIDs {
		// Marked first: the informer's deletion event, which clears the mark, may come before
		// Delete returns.
		s.mu.Lock()
		s.deleted[id] = true
		s.mu.Unlock()
		err := s.client.Namespace(s.namespace).Delete(ctx, id, metav1.DeleteOptions{})
		s.mu.Lock()
		_, known, _ := s.informer.GetStore().GetByKey(s.namespace + "/" + id)
		switch {
		case err != nil && !apierrors.IsNotFound(err):
			delete(s.deleted, id)
			errs = append(errs, fmt.Errorf("deleting launch record %s: %w", id, err))
		case !known && s.written[id] == nil:
			delete(s.deleted, id) // the informer never had it: no deletion event to come
		}
		delete(s.written, id)
		s.mu.Unlock()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("writing launch records: %w", err)
	}
	return nil
}

// LegacyRecordsConfigMap is the ConfigMap (in Config.Namespace) where versions before the
// LaunchRecord resource kept the launch records, one data key per launch ID. The controller
// migrates them when it starts (recordStore.migrate).
const LegacyRecordsConfigMap = "tiler-launches"

// migrate moves the records of the legacy ConfigMap to LaunchRecord objects, once: each record is
// created as an object (one that exists already, from an interrupted migration, is kept), then
// the migrated keys are removed from the ConfigMap in one patch carrying the resourceVersion they
// were read at, and the ConfigMap is deleted once empty. A concurrent write to the ConfigMap (an
// older replica) makes the patch conflict, and the migration starts over. A key that does not
// parse is left in the ConfigMap and logged. Until the keys are removed the records exist twice,
// but the objects are all the controller reads: nothing in flight is forgotten or bought twice.
func (s *recordStore) migrate(ctx context.Context) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cms := s.kube.CoreV1().ConfigMaps(s.namespace)
		cm, err := cms.Get(ctx, LegacyRecordsConfigMap, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		remove := map[string]any{}
		for k, v := range cm.Data {
			var r LaunchRecord
			if err := json.Unmarshal([]byte(v), &r); err != nil {
				s.log.Error("a launch record of the legacy ConfigMap does not parse; it stays there", zap.String("configMap", LegacyRecordsConfigMap),
					zap.String(keyLaunchID, k), zap.Error(err))
				continue
			}
			if r.LaunchID == "" {
				r.LaunchID = k
			}
			obj, err := RecordObject(r, s.namespace)
			if err != nil {
				return err
			}
			if _, err := s.client.Namespace(s.namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating launch record %s: %w", k, err)
			}
			remove[k] = nil
		}
		if len(remove) == len(cm.Data) {
			rv := cm.ResourceVersion
			err := cms.Delete(ctx, LegacyRecordsConfigMap, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
			if err == nil || apierrors.IsNotFound(err) {
				s.log.Info("migrated the launch records of the legacy ConfigMap", zap.Int("records", len(remove)))
				return nil
			}
			return err
		}
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": cm.ResourceVersion}, "data": remove})
		if err != nil {
			return err
		}
		if _, err := cms.Patch(ctx, LegacyRecordsConfigMap, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
			return err
		}
		s.log.Info("migrated the launch records of the legacy ConfigMap", zap.Int("records", len(remove)))
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrating the launch records of ConfigMap %s/%s: %w", s.namespace, LegacyRecordsConfigMap, err)
	}
	return nil
}
