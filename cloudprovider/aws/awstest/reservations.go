package awstest

import (
	"bytes"
	"text/template"
)

// CapacityReservation is an On-Demand Capacity Reservation as DescribeCapacityReservations
// renders it.
type CapacityReservation struct {
	ID, Type, Zone   string
	Total, Available int
	// MatchCriteria is "open" or "targeted"; State "active", "expired", ….
	MatchCriteria, State string
	// ReservationType is "default" (an ODCR, when empty) or "capacity-block".
	ReservationType string
	// Start and End are its start and end dates, RFC 3339; End set makes its end date type
	// limited.
	Start, End string
}

var describeCapacityReservationsTmpl = template.Must(template.New("dcr").Funcs(funcs).Parse(`<?xml version="1.0" encoding="UTF-8"?>
<DescribeCapacityReservationsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
    <requestId>awstest-request</requestId>
    <capacityReservationSet>{{range .Reservations}}
        <item>
            <capacityReservationId>{{.ID}}</capacityReservationId>
            <instanceType>{{.Type}}</instanceType>
            <instancePlatform>Linux/UNIX</instancePlatform>
            <availabilityZone>{{.Zone}}</availabilityZone>
            <tenancy>default</tenancy>
            <totalInstanceCount>{{.Total}}</totalInstanceCount>
            <availableInstanceCount>{{.Available}}</availableInstanceCount>
            <instanceMatchCriteria>{{.MatchCriteria}}</instanceMatchCriteria>
            <state>{{.State}}</state>
            <endDateType>{{if .End}}limited{{else}}unlimited{{end}}</endDateType>{{if .Start}}
            <startDate>{{.Start}}</startDate>{{end}}{{if .End}}
            <endDate>{{.End}}</endDate>{{end}}
            <reservationType>{{if .ReservationType}}{{.ReservationType}}{{else}}default{{end}}</reservationType>
        </item>{{end}}
    </capacityReservationSet>{{if .NextToken}}
    <nextToken>{{.NextToken}}</nextToken>{{end}}
</DescribeCapacityReservationsResponse>
`))

// DescribeCapacityReservations renders a DescribeCapacityReservationsResponse page holding the
// reservations, with nextToken set when it is not empty.
func DescribeCapacityReservations(nextToken string, rs ...CapacityReservation) Response {
	var buf bytes.Buffer
	data := struct {
		Reservations []CapacityReservation
		NextToken    string
	}{rs, nextToken}
	if err := describeCapacityReservationsTmpl.Execute(&buf, data); err != nil {
		panic(err) // the template is fixed; an error is a bug in this file
	}
	return XML(buf.Bytes())
}

// ServeCapacityReservations answers DescribeCapacityReservations from rs as EC2 does: the ones
// named by CapacityReservationId.N (InvalidCapacityReservationId.NotFound when one is unknown),
// else all, less those whose state a "state" filter excludes.
func (s *Server) ServeCapacityReservations(rs ...CapacityReservation) {
	s.Handle("DescribeCapacityReservations", func(r Request) Response {
		ids := r.FormList("CapacityReservationId")
		states := r.EC2Filters()["state"]
		var out []CapacityReservation
		for _, id := range ids {
			found := false
			for _, c := range rs {
				found = found || c.ID == id
			}
			if !found {
				return EC2Error(400, "InvalidCapacityReservationId.NotFound", "The capacity reservation ID '"+id+"' does not exist")
			}
		}
		for _, c := range rs {
			named := len(ids) == 0
			for _, id := range ids {
				named = named || c.ID == id
			}
			inState := len(states) == 0
			for _, st := range states {
				inState = inState || c.State == st
			}
			if named && inState {
				out = append(out, c)
			}
		}
		return DescribeCapacityReservations("", out...)
	})
}
