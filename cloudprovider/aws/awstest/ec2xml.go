package awstest

import (
	"bytes"
	"html"
	"sort"
	"text/template"
	"time"
)

// Instance is an EC2 instance as DescribeInstancesResponse renders it.
type Instance struct {
	ID, Type, Zone, SubnetID string
	// State is the EC2 state name: pending, running, shutting-down, terminated, stopping, stopped.
	State string
	// Lifecycle is "spot" or empty for on-demand (EC2 omits instanceLifecycle for on-demand).
	Lifecycle string
	// StateReason is EC2's code for the last state change (e.g. Server.SpotInstanceTermination),
	// rendered as stateReason when it is not empty.
	StateReason string
	// ImageID is the AMI the instance booted from, rendered as imageId when it is not empty.
	ImageID    string
	LaunchTime time.Time
	Tags       map[string]string
}

// Tag is a key/value pair in a tagSet.
type Tag struct{ Key, Value string }

// SortedTags returns the instance's tags in key order.
func (i Instance) SortedTags() []Tag {
	var out []Tag
	for k, v := range i.Tags {
		out = append(out, Tag{k, v})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Key < out[b].Key })
	return out
}

// funcs escapes free text for XML element content.
var funcs = template.FuncMap{"esc": html.EscapeString}

var describeInstancesTmpl = template.Must(template.New("di").Funcs(funcs).Parse(`<?xml version="1.0" encoding="UTF-8"?>
<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
    <requestId>awstest-request</requestId>
    <reservationSet>{{range .Instances}}
        <item>
            <reservationId>r-{{.ID}}</reservationId>
            <instancesSet>
                <item>
                    <instanceId>{{.ID}}</instanceId>
                    <instanceState><name>{{.State}}</name></instanceState>{{if .StateReason}}
                    <stateReason><code>{{esc .StateReason}}</code><message>{{esc .StateReason}}</message></stateReason>{{end}}
                    <instanceType>{{.Type}}</instanceType>{{if .ImageID}}
                    <imageId>{{esc .ImageID}}</imageId>{{end}}
                    <launchTime>{{.LaunchTime.UTC.Format "2006-01-02T15:04:05.000Z"}}</launchTime>
                    <placement><availabilityZone>{{.Zone}}</availabilityZone></placement>
                    <subnetId>{{.SubnetID}}</subnetId>{{if .Lifecycle}}
                    <instanceLifecycle>{{.Lifecycle}}</instanceLifecycle>{{end}}
                    <tagSet>{{range .SortedTags}}
                        <item><key>{{esc .Key}}</key><value>{{esc .Value}}</value></item>{{end}}
                    </tagSet>
                </item>
            </instancesSet>
        </item>{{end}}
    </reservationSet>{{if .NextToken}}
    <nextToken>{{.NextToken}}</nextToken>{{end}}
</DescribeInstancesResponse>
`))

// DescribeInstances renders a DescribeInstancesResponse page holding instances, one reservation
// each, with nextToken set when it is not empty.
func DescribeInstances(nextToken string, instances ...Instance) Response {
	var buf bytes.Buffer
	data := struct {
		Instances []Instance
		NextToken string
	}{instances, nextToken}
	if err := describeInstancesTmpl.Execute(&buf, data); err != nil {
		panic(err) // the template is fixed; an error is a bug in this file
	}
	return XML(buf.Bytes())
}

// FleetPool names one (type, subnet, zone) override and its lifecycle in a CreateFleet answer.
type FleetPool struct {
	Type, SubnetID, Zone string
	// Lifecycle is "spot" or "on-demand".
	Lifecycle string
}

// FleetError is one errorSet item.
type FleetError struct {
	Pool          FleetPool
	Code, Message string
}

// FleetLaunch is one fleetInstanceSet item.
type FleetLaunch struct {
	Pool        FleetPool
	InstanceIDs []string
}

var createFleetTmpl = template.Must(template.New("cf").Funcs(funcs).Parse(`<?xml version="1.0" encoding="UTF-8"?>
<CreateFleetResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
    <requestId>awstest-request</requestId>
    <fleetId>fleet-awstest</fleetId>
    <errorSet>{{range .Errors}}
        <item>
            <launchTemplateAndOverrides>
                <overrides>
                    <instanceType>{{.Pool.Type}}</instanceType>
                    <subnetId>{{.Pool.SubnetID}}</subnetId>
                    <availabilityZone>{{.Pool.Zone}}</availabilityZone>
                </overrides>
            </launchTemplateAndOverrides>
            <lifecycle>{{.Pool.Lifecycle}}</lifecycle>
            <errorCode>{{.Code}}</errorCode>
            <errorMessage>{{esc .Message}}</errorMessage>
        </item>{{end}}
    </errorSet>
    <fleetInstanceSet>{{range .Launches}}
        <item>
            <launchTemplateAndOverrides>
                <overrides>
                    <instanceType>{{.Pool.Type}}</instanceType>
                    <subnetId>{{.Pool.SubnetID}}</subnetId>
                    <availabilityZone>{{.Pool.Zone}}</availabilityZone>
                </overrides>
            </launchTemplateAndOverrides>
            <lifecycle>{{.Pool.Lifecycle}}</lifecycle>
            <instanceIds>{{range .InstanceIDs}}<item>{{.}}</item>{{end}}</instanceIds>
            <instanceType>{{.Pool.Type}}</instanceType>
        </item>{{end}}
    </fleetInstanceSet>
</CreateFleetResponse>
`))

// CreateFleet renders an instant-fleet CreateFleetResponse (always HTTP 200: EC2 reports per-pool
// failures in errorSet).
func CreateFleet(launches []FleetLaunch, errs []FleetError) Response {
	var buf bytes.Buffer
	data := struct {
		Launches []FleetLaunch
		Errors   []FleetError
	}{launches, errs}
	if err := createFleetTmpl.Execute(&buf, data); err != nil {
		panic(err)
	}
	return XML(buf.Bytes())
}
