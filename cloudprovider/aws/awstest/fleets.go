package awstest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FleetStore is a stateful EC2 for launches: CreateFleet (type instant) launches instances
// tagged as the request's instance TagSpecification says, and DescribeInstances finds them by tag,
// state and ID, so that a provider's launch-ID lookup sees what earlier calls launched. A
// ClientToken seen before gets the first answer again and launches nothing, as EC2's idempotency
// does. Requests the trouble window marks Partial (Trouble.PartialFleetShare) launch one instance
// fewer than asked, with an InsufficientInstanceCapacity errorSet item for each override.
type FleetStore struct {
	mu        sync.Mutex
	instances []Instance
	byToken   map[string]Response
	next      int
}

// ServeFleets makes the server answer CreateFleet and DescribeInstances from a FleetStore.
func (s *Server) ServeFleets() *FleetStore {
	st := &FleetStore{byToken: map[string]Response{}}
	s.Handle("CreateFleet", st.create)
	s.Handle("DescribeInstances", st.describe)
	return st
}

// Instances returns the instances launched so far.
func (st *FleetStore) Instances() []Instance {
	st.mu.Lock()
	defer st.mu.Unlock()
	return slices.Clone(st.instances)
}

func (st *FleetStore) create(r Request) Response {
	st.mu.Lock()
	defer st.mu.Unlock()
	token := r.Form.Get("ClientToken")
	if resp, ok := st.byToken[token]; ok && token != "" {
		return resp
	}
	lifecycle := r.Form.Get("TargetCapacitySpecification.DefaultTargetCapacityType")
	var pools []FleetPool
	for n := 1; ; n++ {
		k := fmt.Sprintf("LaunchTemplateConfigs.1.Overrides.%d.", n)
		typ := r.Form.Get(k + "InstanceType")
		if typ == "" {
			break
		}
		pools = append(pools, FleetPool{Type: typ, Zone: r.Form.Get(k + "AvailabilityZone"), SubnetID: r.Form.Get(k + "SubnetId"), Lifecycle: lifecycle})
	}
	asked, err := strconv.Atoi(r.Form.Get("TargetCapacitySpecification.TotalTargetCapacity"))
	if err != nil || asked < 1 || len(pools) == 0 || r.Form.Get("Type") != "instant" {
		return EC2Error(400, "InvalidParameterValue", "awstest: want an instant fleet with a TotalTargetCapacity and overrides")
	}
	launch := asked
	var errs []FleetError
	if r.Partial {
		launch--
		for _, p := range pools {
			errs = append(errs, FleetError{Pool: p, Code: "InsufficientInstanceCapacity",
				Message: "There is no Spot capacity available that matches your request."})
		}
	}
	var launches []FleetLaunch
	if launch > 0 {
		l := FleetLaunch{Pool: pools[0]}
		for range launch {
			st.next++
			inst := Instance{ID: fmt.Sprintf("i-%017x", st.next), Type: pools[0].Type, Zone: pools[0].Zone, SubnetID: pools[0].SubnetID,
				State: "pending", LaunchTime: time.Now().UTC().Truncate(time.Millisecond), Tags: r.TagSpecifications()["instance"]}
			if lifecycle == "spot" {
				inst.Lifecycle = "spot"
			}
			st.instances = append(st.instances, inst)
			l.InstanceIDs = append(l.InstanceIDs, inst.ID)
		}
		launches = append(launches, l)
	}
	resp := CreateFleet(launches, errs)
	st.byToken[token] = resp
	return resp
}

func (st *FleetStore) describe(r Request) Response {
	st.mu.Lock()
	defer st.mu.Unlock()
	filters := r.EC2Filters()
	ids := r.FormList("InstanceId")
	var out []Instance
	for _, inst := range st.instances {
		if len(ids) > 0 && !slices.Contains(ids, inst.ID) {
			continue
		}
		ok := true
		for name, values := range filters {
			switch {
			case strings.HasPrefix(name, "tag:"):
				v, has := inst.Tags[strings.TrimPrefix(name, "tag:")]
				ok = ok && has && slices.Contains(values, v)
			case name == "instance-state-name":
				ok = ok && slices.Contains(values, inst.State)
			case name == "instance-id":
				ok = ok && slices.Contains(values, inst.ID)
			default:
				return EC2Error(400, "InvalidParameterValue", "awstest: the fleet store has no filter "+name)
			}
		}
		if ok {
			out = append(out, inst)
		}
	}
	return DescribeInstances("", out...)
}
