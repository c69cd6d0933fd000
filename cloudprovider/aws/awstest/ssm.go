package awstest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
)

// Parameters are SSM parameters the Server serves (ServeParameters) as SSM's GetParameter does:
// the value and version of a parameter by name, ParameterNotFound (HTTP 400) for another name.
// Set changes a value and bumps its version, as AWS publishing a new AMI under its public
// parameter does.
type Parameters struct {
	mu       sync.Mutex
	values   map[string]string
	versions map[string]int64
}

// ServeParameters answers GetParameter from a new Parameters holding values.
func (s *Server) ServeParameters(values map[string]string) *Parameters {
	ps := &Parameters{values: map[string]string{}, versions: map[string]int64{}}
	for k, v := range values {
		ps.Set(k, v)
	}
	s.Handle("GetParameter", ps.get)
	return ps
}

// Set gives the parameter a new value, one version up.
func (ps *Parameters) Set(name, value string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.values[name] = value
	ps.versions[name]++
}

func (ps *Parameters) get(r Request) Response {
	var in struct{ Name string }
	if err := json.Unmarshal(r.Body, &in); err != nil {
		return jsonError(http.StatusBadRequest, ContentTypeSSM, "ValidationException", err.Error())
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	v, ok := ps.values[in.Name]
	if !ok {
		return jsonError(http.StatusBadRequest, ContentTypeSSM, "ParameterNotFound", fmt.Sprintf("Parameter %s not found.", in.Name))
	}
	body, _ := json.Marshal(map[string]any{"Parameter": map[string]any{
		"ARN":      "arn:aws:ssm:" + Region + "::parameter" + in.Name,
		"DataType": "aws:ec2:image", "LastModifiedDate": 1.7648064e9, "Name": in.Name,
		"Type": "String", "Value": v, "Version": ps.versions[in.Name],
	}})
	return Response{Status: http.StatusOK, ContentType: ContentTypeSSM, Body: body}
}
