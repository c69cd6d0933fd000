package api

import (
	"bytes"
	"strings"
	"testing"
)

// TestWriteTableReservation: the table names the reservation a new node is bought on.
func TestWriteTableReservation(t *testing.T) {
	p := &Plan{CostPerHour: 0, NewNodes: []NewNode{{Name: "tiler-web-a", Pool: "web", Pods: []string{"shop/web-0"},
		PricedOffering: PricedOffering{Offering: Offering{InstanceType: "m7i.xlarge", Zone: "us-east-1a", CapacityType: OnDemand},
			CapacityReservation: "cr-0abc"}}}}
	var buf bytes.Buffer
	if err := p.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "tiler-web-a on capacity reservation cr-0abc") {
		t.Errorf("table:\n%s", buf.String())
	}
}
