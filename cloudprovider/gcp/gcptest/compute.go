package gcptest

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// InsertFailure makes matching instances.insert calls fail, either at once (Status and Body) or
// through their operation (Operation).
type InsertFailure struct {
	// Zone, MachineType (short name) and ProvisioningModel select the inserts; empty matches any.
	Zone              string
	MachineType       string
	ProvisioningModel string
	// Status and Body, when Status is set, are returned instead of an operation.
	Status int
	Body   []byte
	// Operation is a recorded DONE operation with an error (operation.insert.stockout.json): the
	// insert is accepted with a RUNNING operation that ends as this one, and no instance is made.
	Operation []byte
	// Times is how many inserts fail; 0 means all of them.
	Times int
}

type fakeOp struct {
	running, final *computepb.Operation
	pollsLeft      int
	onDone         func()
}

type computeState struct {
	t                testing.TB
	machineTypePages map[string][][]byte // per zone; nil entry → default pages
	defaultMTPages   [][]byte
	acceleratorTypes []byte
	instances        map[string]*computepb.Instance    // zone/name
	reservations     map[string]*computepb.Reservation // zone/name
	ops              map[string]*fakeOp                // zone/name
	systemOps        map[string][]*computepb.Operation
	requestOps       map[string]string // requestId → zone/op name
	insertFailures   []*InsertFailure
	pollsUntilDone   int
	nextID           uint64
	// families maps project/family to the image it names now (SetImageFamily).
	families map[string]string
}

func newComputeState(t testing.TB) computeState {
	return computeState{
		t:                t,
		machineTypePages: map[string][][]byte{},
		defaultMTPages:   [][]byte{Fixture(t, "machineTypes.list.page1.json"), Fixture(t, "machineTypes.list.page2.json")},
		acceleratorTypes: Fixture(t, "acceleratorTypes.list.json"),
		instances:        map[string]*computepb.Instance{},
		reservations:     map[string]*computepb.Reservation{},
		families:         map[string]string{"cos-cloud/cos-stable": DefaultCOSImage},
		ops:              map[string]*fakeOp{},
		systemOps:        map[string][]*computepb.Operation{},
		requestOps:       map[string]string{},
		pollsUntilDone:   1,
		nextID:           6105395321733014149,
	}
}

// SetMachineTypePages replaces the machine type pages of one zone (every zone serves the recorded
// two pages by default); no pages means the zone has no machine types.
func (s *Server) SetMachineTypePages(zone string, pages ...[]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pages == nil {
		pages = [][]byte{[]byte(`{"items":[]}`)}
	}
	s.compute.machineTypePages[zone] = pages
}

// SetPollsUntilDone sets how many operation polls answer RUNNING before DONE (default 1).
func (s *Server) SetPollsUntilDone(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compute.pollsUntilDone = n
}

// FailInserts adds an insert failure; failures are matched in the order they were added.
func (s *Server) FailInserts(f InsertFailure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compute.insertFailures = append(s.compute.insertFailures, &f)
}

// AddInstance stores an instance in zone, as if it had been created earlier.
func (s *Server) AddInstance(zone string, inst *computepb.Instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compute.instances[zone+"/"+inst.GetName()] = proto.CloneOf(inst)
}

// Instance returns a copy of a stored instance, or nil.
func (s *Server) Instance(zone, name string) *computepb.Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	if inst, ok := s.compute.instances[zone+"/"+name]; ok {
		return proto.CloneOf(inst)
	}
	return nil
}

// Preempt reclaims a spot instance the way Compute Engine does: the instance becomes TERMINATED
// (or is removed, for instanceTerminationAction DELETE) and a compute.instances.preempted system
// operation appears in the zone's operation list. at is the event time (RFC 3339).
func (s *Server) Preempt(zone, name, at string, remove bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := zone + "/" + name
	if inst, ok := s.compute.instances[key]; ok {
		inst.Status = proto.String("TERMINATED")
		inst.LastStopTimestamp = proto.String(at)
		if remove {
			s.releaseLocked(zone, inst)
			delete(s.compute.instances, key)
		}
	}
	var list computepb.OperationList
	if err := protojson.Unmarshal(Fixture(s.t, "zoneOperations.list.preempted.json"), &list); err != nil {
		s.t.Fatalf("zoneOperations.list.preempted.json: %v", err)
	}
	op := list.GetItems()[0]
	s.compute.nextID++
	op.Name = proto.String(fmt.Sprintf("systemevent-%d", s.compute.nextID))
	op.Zone = proto.String(s.selfLink("zones/" + zone))
	op.TargetLink = proto.String(s.selfLink("zones/" + zone + "/instances/" + name))
	op.InsertTime, op.StartTime, op.EndTime = proto.String(at), proto.String(at), proto.String(at)
	s.compute.systemOps[zone] = append(s.compute.systemOps[zone], op)
}

// DefaultCOSImage is the image the family cos-cloud/cos-stable names until SetImageFamily moves
// it.
const DefaultCOSImage = "cos-stable-121-18867-90-38"

// SetImageFamily makes family of project name image, as publishing a new image in a family does
// (images.getFromFamily answers it); "" removes the family.
func (s *Server) SetImageFamily(project, family, image string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if image == "" {
		delete(s.compute.families, project+"/"+family)
		return
	}
	s.compute.families[project+"/"+family] = image
}

// serveImageFamilyLocked answers images.getFromFamily: projects/{p}/global/images/family/{f}.
func (s *Server) serveImageFamilyLocked(w http.ResponseWriter, project, family string) {
	name, ok := s.compute.families[project+"/"+family]
	if !ok {
		writeError(w, http.StatusNotFound, "notFound", fmt.Sprintf("The resource 'projects/%s/global/images/family/%s' was not found", project, family))
		return
	}
	writeProto(w, &computepb.Image{Name: proto.String(name), Family: proto.String(family), Status: proto.String("READY"),
		SelfLink: proto.String("https://www.googleapis.com/compute/v1/projects/" + project + "/global/images/" + name)})
}

// serveComputeLocked routes projects/{p}/zones/{zone}/{collection}[/{name}[/wait]].
func (s *Server) serveComputeLocked(w http.ResponseWriter, r *http.Request, parts []string, body []byte) {
	if len(parts) < 3 || parts[0] != "zones" {
		writeError(w, http.StatusNotFound, "notFound", "the fake serves zonal resources only")
		return
	}
	zone, collection, rest := parts[1], parts[2], parts[3:]
	route := r.Method + " " + collection
	if len(rest) > 0 {
		route += "/{name}"
	}
	if len(rest) > 1 {
		route += "/" + rest[1]
	}
	switch route {
	case "GET machineTypes":
		pages := s.compute.machineTypePages[zone]
		if pages == nil {
			pages = s.compute.defaultMTPages
		}
		servePage(w, r, pages)
	case "GET acceleratorTypes":
		writeRaw(w, http.StatusOK, s.compute.acceleratorTypes)
	case "GET instances":
		s.listInstancesLocked(w, r, zone)
	case "POST instances":
		s.insertLocked(w, r, zone, body)
	case "GET instances/{name}":
		s.getInstanceLocked(w, zone, rest[0])
	case "GET reservations/{name}":
		s.getReservationLocked(w, zone, rest[0])
	case "DELETE instances/{name}":
		s.deleteInstanceLocked(w, zone, rest[0])
	case "GET operations":
		s.listOperationsLocked(w, r, zone)
	case "GET operations/{name}", "POST operations/{name}/wait":
		s.pollOperationLocked(w, zone, rest[0], route != "GET operations/{name}")
	default:
		writeError(w, http.StatusNotFound, "notFound", "the fake has no route for "+route)
	}
}

func (s *Server) getInstanceLocked(w http.ResponseWriter, zone, name string) {
	inst, ok := s.compute.instances[zone+"/"+name]
	if !ok {
		writeError(w, http.StatusNotFound, "notFound", s.notFoundMessage(zone, name))
		return
	}
	writeProto(w, inst)
}

func (s *Server) notFoundMessage(zone, name string) string {
	return fmt.Sprintf("The resource 'projects/%s/zones/%s/instances/%s' was not found", s.project, zone, name)
}

func (s *Server) deleteInstanceLocked(w http.ResponseWriter, zone, name string) {
	key := zone + "/" + name
	inst, ok := s.compute.instances[key]
	if !ok {
		writeError(w, http.StatusNotFound, "notFound", s.notFoundMessage(zone, name))
		return
	}
	s.releaseLocked(zone, inst)
	delete(s.compute.instances, key)
	op := s.newOperationLocked(zone, name, "delete")
	op.Status = computepb.Operation_DONE.Enum()
	writeProto(w, op)
}

func (s *Server) listInstancesLocked(w http.ResponseWriter, r *http.Request, zone string) {
	var items []*computepb.Instance
	for key, inst := range s.compute.instances {
		if !strings.HasPrefix(key, zone+"/") {
			continue
		}
		ok, err := matchFilter(r.URL.Query().Get("filter"), func(field string) (string, bool) { return instanceField(inst, field) })
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid", err.Error())
			return
		}
		if ok {
			items = append(items, inst)
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].GetName() < items[j].GetName() })
	page, next := paginate(r, len(items))
	writeProto(w, &computepb.InstanceList{Items: items[page[0]:page[1]], NextPageToken: optString(next)})
}

func (s *Server) listOperationsLocked(w http.ResponseWriter, r *http.Request, zone string) {
	var items []*computepb.Operation
	for _, op := range s.compute.systemOps[zone] {
		ok, err := matchFilter(r.URL.Query().Get("filter"), func(field string) (string, bool) {
			return op.GetOperationType(), field == "operationType"
		})
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid", err.Error())
			return
		}
		if ok {
			items = append(items, op)
		}
	}
	page, next := paginate(r, len(items))
	writeProto(w, &computepb.OperationList{Items: items[page[0]:page[1]], NextPageToken: optString(next)})
}

func (s *Server) pollOperationLocked(w http.ResponseWriter, zone, name string, wait bool) {
	op, ok := s.compute.ops[zone+"/"+name]
	if !ok {
		writeError(w, http.StatusNotFound, "notFound", fmt.Sprintf("operation %s not found", name))
		return
	}
	if op.pollsLeft > 0 && !wait {
		op.pollsLeft--
		writeProto(w, op.running)
		return
	}
	if op.onDone != nil {
		op.onDone()
		op.onDone = nil
	}
	writeProto(w, op.final)
}

func writeProto(w http.ResponseWriter, m proto.Message) {
	b, err := protojson.Marshal(m)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "backendError", err.Error())
		return
	}
	writeRaw(w, http.StatusOK, b)
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
