package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/tiler-dev/tiler/api"

	awscloud "github.com/tiler-dev/tiler/cloudprovider/aws"
	awspricing "github.com/tiler-dev/tiler/pricing/aws"
)

// iamPolicy is deploy/aws-iam-policy.json, the policy of the controller's IAM role.
var iamPolicy = filepath.Join("..", "..", "deploy", "aws-iam-policy.json")

type iamStatement struct {
	Sid       string
	Effect    string
	Action    json.RawMessage
	Resource  json.RawMessage
	Condition map[string]map[string]json.RawMessage
}

// stringOrList reads an IAM field that is one string or a list of them.
func stringOrList(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return []string{one}
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("%s: neither a string nor a list of strings", raw)
	}
	return list
}

// TestIAMPolicy checks deploy/aws-iam-policy.json against the code: it allows every AWS API call
// Tiler's clients make (each method of the SDK interfaces the AWS cloud provider, its interruption
// queue and the AWS price source are written against), plus what those calls need besides
// (CreateFleet launches through RunInstances, tags through CreateTags and passes the node role),
// and nothing else; instances can be terminated and launch templates deleted only when tagged
// with Tiler's cluster tag, tags created only with the resources Tiler creates, and SSM
// parameters read only among AWS's public ones (the EKS AMI parameters).
func TestIAMPolicy(t *testing.T) {
	data, err := os.ReadFile(iamPolicy)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version   string
		Statement []iamStatement
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%s: %v", iamPolicy, err)
	}
	if doc.Version != "2012-10-17" {
		t.Errorf("Version %q, want 2012-10-17", doc.Version)
	}
	want := map[string]bool{"ec2:RunInstances": true, "ec2:CreateTags": true, "iam:PassRole": true}
	for prefix, iface := range map[string][]reflect.Type{
		"ec2": {reflect.TypeFor[awscloud.EC2API](), reflect.TypeFor[awspricing.EC2API]()},
		"sqs": {reflect.TypeFor[awscloud.SQSAPI]()}, "pricing": {reflect.TypeFor[awspricing.PricingAPI]()},
		"ssm": {reflect.TypeFor[awscloud.SSMAPI]()},
	} {
		for _, it := range iface {
			for i := range it.NumMethod() {
				want[prefix+":"+it.Method(i).Name] = true
			}
		}
	}
	allowed := map[string]iamStatement{}
	for _, s := range doc.Statement {
		if s.Effect != "Allow" {
			t.Errorf("statement %s: effect %q", s.Sid, s.Effect)
		}
		for _, a := range stringOrList(t, s.Action) {
			if _, dup := allowed[a]; dup {
				t.Errorf("%s is allowed twice", a)
			}
			allowed[a] = s
		}
	}
	var missing, extra []string
	for a := range want {
		if _, ok := allowed[a]; !ok {
			missing = append(missing, a)
		}
	}
	for a := range allowed {
		if !want[a] {
			extra = append(extra, a)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("%s: missing %v (called by the code), not called by the code %v", iamPolicy, missing, extra)
	}
	for _, a := range []string{"ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"} {
		if s := allowed[a]; s.Condition["StringEquals"]["aws:ResourceTag/"+api.TagCluster] == nil {
			t.Errorf("%s is not limited to resources tagged %s: %+v", a, api.TagCluster, s.Condition)
		}
	}
	if s := allowed["ec2:CreateTags"]; s.Condition["StringEquals"]["ec2:CreateAction"] == nil {
		t.Errorf("ec2:CreateTags is not limited to tagging on create: %+v", s.Condition)
	}
	// Images are read from AWS's public parameters (resolve:ssm:/aws/service/…), not any.
	if s := allowed["ssm:GetParameter"]; !strings.Contains(string(s.Resource), "parameter/aws/service/") {
		t.Errorf("ssm:GetParameter must be limited to AWS's public parameters: %s", s.Resource)
	}
	if s := allowed["iam:PassRole"]; strings.Contains(string(s.Resource), `"*"`) || s.Condition["StringEquals"]["iam:PassedToService"] == nil {
		t.Errorf("iam:PassRole must name the node role and be passed to EC2 only: %s %+v", s.Resource, s.Condition)
	}
}
