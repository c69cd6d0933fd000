package gcptest

import (
	"fmt"
	"net/http"
	"path"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// creationTimestamp is the creation time of every instance the fake makes (instances.get.json).
const creationTimestamp = "2026-07-20T11:42:22.531-07:00"

// insertLocked implements instances.insert: the body must decode strictly into an Instance and
// name a machine type the zone has; a taken name is a 409 alreadyExists; a requestId seen before
// returns the operation of the first call, as Compute Engine does.
func (s *Server) insertLocked(w http.ResponseWriter, r *http.Request, zone string, body []byte) {
	var inst computepb.Instance
	if err := protojson.Unmarshal(body, &inst); err != nil {
		writeError(w, http.StatusBadRequest, "parseError", "the fake could not decode the instance: "+err.Error())
		return
	}
	reqID := r.URL.Query().Get("requestId")
	if key, ok := s.compute.requestOps[reqID]; ok && reqID != "" {
		writeProto(w, s.compute.ops[key].running)
		return
	}
	if msg := s.checkInsertLocked(zone, &inst); msg != "" {
		writeError(w, http.StatusBadRequest, "invalid", msg)
		return
	}
	key := zone + "/" + inst.GetName()
	if _, ok := s.compute.instances[key]; ok {
		writeRaw(w, http.StatusConflict, Fixture(s.t, "error.alreadyExists.json"))
		return
	}
	if f := s.matchInsertFailureLocked(zone, &inst); f != nil {
		if f.Status != 0 {
			writeRaw(w, f.Status, f.Body)
			return
		}
		op := s.failingInsertLocked(zone, inst.GetName(), f.Operation)
		s.compute.requestOps[reqID] = zone + "/" + op.GetName()
		writeProto(w, op)
		return
	}
	msg, reservation := s.reserveLocked(zone, &inst)
	if msg != "" {
		writeError(w, http.StatusBadRequest, "invalid", msg)
		return
	}
	s.createLocked(zone, &inst)
	if reservation != nil {
		s.consumeLocked(&inst, reservation)
	}
	op := s.newOperationLocked(zone, inst.GetName(), "insert")
	s.compute.ops[zone+"/"+op.GetName()].onDone = func() { s.compute.instances[key].Status = proto.String("RUNNING") }
	s.compute.requestOps[reqID] = zone + "/" + op.GetName()
	writeProto(w, op)
}

func (s *Server) lastOpName() string { return fmt.Sprintf("operation-%d", s.compute.nextID) }

// checkInsertLocked returns why Compute Engine would reject the instance, or "".
func (s *Server) checkInsertLocked(zone string, inst *computepb.Instance) string {
	if inst.GetName() == "" {
		return "Invalid value for field 'resource.name': ''"
	}
	prefix := "zones/" + zone + "/machineTypes/"
	mt := inst.GetMachineType()
	if !strings.HasPrefix(mt, prefix) && !strings.HasPrefix(mt, s.selfLink(prefix)) {
		return fmt.Sprintf("Invalid value for field 'resource.machineType': '%s'", mt)
	}
	if !s.zoneHasMachineTypeLocked(zone, path.Base(mt)) {
		return fmt.Sprintf("Invalid value for field 'resource.machineType': '%s'. Machine type does not exist in zone %s", mt, zone)
	}
	for _, acc := range inst.GetGuestAccelerators() {
		if !strings.HasPrefix(acc.GetAcceleratorType(), "zones/"+zone+"/acceleratorTypes/") {
			return fmt.Sprintf("Invalid value for field 'resource.guestAccelerators[0].acceleratorType': '%s'", acc.GetAcceleratorType())
		}
	}
	return ""
}

func (s *Server) zoneHasMachineTypeLocked(zone, name string) bool {
	pages := s.compute.machineTypePages[zone]
	if pages == nil {
		pages = s.compute.defaultMTPages
	}
	for _, p := range pages {
		var list computepb.MachineTypeList
		if protojson.Unmarshal(p, &list) != nil {
			continue
		}
		for _, mt := range list.GetItems() {
			if mt.GetName() == name {
				return true
			}
		}
	}
	return false
}

func (s *Server) matchInsertFailureLocked(zone string, inst *computepb.Instance) *InsertFailure {
	for i, f := range s.compute.insertFailures {
		if (f.Zone != "" && f.Zone != zone) ||
			(f.MachineType != "" && f.MachineType != path.Base(inst.GetMachineType())) ||
			(f.ProvisioningModel != "" && f.ProvisioningModel != inst.GetScheduling().GetProvisioningModel()) {
			continue
		}
		if f.Times > 0 {
			f.Times--
			if f.Times == 0 {
				s.compute.insertFailures = append(s.compute.insertFailures[:i:i], s.compute.insertFailures[i+1:]...)
			}
		}
		return f
	}
	return nil
}

// failingInsertLocked accepts the insert with a RUNNING operation that ends as the recorded one.
func (s *Server) failingInsertLocked(zone, name string, recorded []byte) *computepb.Operation {
	op := s.newOperationLocked(zone, name, "insert")
	var final computepb.Operation
	if err := protojson.Unmarshal(recorded, &final); err != nil {
		s.t.Fatalf("gcptest: recorded operation does not decode: %v", err)
	}
	final.Name, final.Zone, final.TargetLink = op.Name, op.Zone, op.TargetLink
	s.compute.ops[zone+"/"+op.GetName()].final = &final
	return op
}

// createLocked stores the instance as the API would show it: full URLs, an ID, PROVISIONING.
func (s *Server) createLocked(zone string, inst *computepb.Instance) {
	s.compute.nextID++
	inst.Id = proto.Uint64(s.compute.nextID)
	inst.Kind = proto.String("compute#instance")
	inst.CreationTimestamp = proto.String(creationTimestamp)
	inst.Status = proto.String("PROVISIONING")
	inst.Zone = proto.String(s.selfLink("zones/" + zone))
	inst.MachineType = proto.String(s.selfLink("zones/" + zone + "/machineTypes/" + path.Base(inst.GetMachineType())))
	inst.SelfLink = proto.String(s.selfLink("zones/" + zone + "/instances/" + inst.GetName()))
	for _, acc := range inst.GetGuestAccelerators() {
		acc.AcceleratorType = proto.String(s.selfLink(acc.GetAcceleratorType()))
	}
	s.compute.instances[zone+"/"+inst.GetName()] = inst
}

// newOperationLocked stores a zonal operation on an instance, RUNNING for pollsUntilDone polls and
// then DONE (the shapes of operation.insert.running.json and operation.insert.done.json).
func (s *Server) newOperationLocked(zone, instance, kind string) *computepb.Operation {
	s.compute.nextID++
	name := s.lastOpName()
	running := &computepb.Operation{
		Kind: proto.String("compute#operation"), Id: proto.Uint64(s.compute.nextID), Name: proto.String(name),
		Zone: proto.String(s.selfLink("zones/" + zone)), OperationType: proto.String(kind),
		TargetLink: proto.String(s.selfLink("zones/" + zone + "/instances/" + instance)),
		Status:     computepb.Operation_RUNNING.Enum(), Progress: proto.Int32(0),
		SelfLink: proto.String(s.selfLink("zones/" + zone + "/operations/" + name)),
	}
	final := proto.CloneOf(running)
	final.Status, final.Progress = computepb.Operation_DONE.Enum(), proto.Int32(100)
	s.compute.ops[zone+"/"+name] = &fakeOp{running: running, final: final, pollsLeft: s.compute.pollsUntilDone}
	return running
}

// matchFilter evaluates the filters Tiler sends: terms `field = "value"` (quotes optional), each
// possibly in parentheses, joined by AND. Other syntax, and fields field does not know, are
// errors, so that a test notices a filter the fake would silently misread.
func matchFilter(filter string, field func(string) (string, bool)) (bool, error) {
	if strings.TrimSpace(filter) == "" {
		return true, nil
	}
	match := true
	for _, term := range strings.Split(filter, " AND ") {
		term = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(term), "("), ")")
		key, val, ok := strings.Cut(term, "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if !ok || strings.ContainsAny(key, "!<>:") {
			return false, fmt.Errorf("the fake cannot evaluate filter term %q", term)
		}
		if unq, err := strconv.Unquote(val); err == nil {
			val = unq
		}
		got, known := field(key)
		if !known {
			return false, fmt.Errorf("the fake does not know filter field %q", key)
		}
		match = match && got == val
	}
	return match, nil
}

func instanceField(inst *computepb.Instance, field string) (string, bool) {
	if label, ok := strings.CutPrefix(field, "labels."); ok {
		return inst.GetLabels()[label], true
	}
	switch field {
	case "status":
		return inst.GetStatus(), true
	case "name":
		return inst.GetName(), true
	}
	return "", false
}

// paginate returns the [from, to) slice bounds of the page asked for by maxResults and pageToken
// (an offset), and the next token.
func paginate(r *http.Request, n int) ([2]int, string) {
	from, _ := strconv.Atoi(r.URL.Query().Get("pageToken"))
	size, err := strconv.Atoi(r.URL.Query().Get("maxResults"))
	if err != nil || size <= 0 {
		size = 500
	}
	from = min(from, n)
	to := min(from+size, n)
	next := ""
	if to < n {
		next = strconv.Itoa(to)
	}
	return [2]int{from, to}, next
}
