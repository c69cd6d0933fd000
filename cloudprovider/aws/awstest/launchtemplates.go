package awstest

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"text/template"
	"time"
)

// LaunchTemplate is a launch template as CreateLaunchTemplate and DescribeLaunchTemplates render
// it (the shape of the EC2 API reference's LaunchTemplate element).
type LaunchTemplate struct {
	ID, Name   string
	CreateTime time.Time
	Tags       map[string]string
	// DefaultVersion and LatestVersion are its default and latest version numbers (0: 1).
	DefaultVersion, LatestVersion int
}

// versions returns the default and latest version numbers, 1 when unset.
func (lt LaunchTemplate) versions() (def, latest int) {
	return max(lt.DefaultVersion, 1), max(lt.LatestVersion, lt.DefaultVersion, 1)
}

// DefaultVersionNumber is the default version number (1 when unset).
func (lt LaunchTemplate) DefaultVersionNumber() int { d, _ := lt.versions(); return d }

// LatestVersionNumber is the latest version number (1 when unset, never below the default).
func (lt LaunchTemplate) LatestVersionNumber() int { _, l := lt.versions(); return l }

// SortedTags returns the template's tags in key order.
func (lt LaunchTemplate) SortedTags() []Tag {
	return Instance{Tags: lt.Tags}.SortedTags()
}

// ltFields are the elements of a LaunchTemplate, inside <launchTemplate> or a list's <item>.
const ltFields = `{{define "fields"}}
            <createTime>{{.CreateTime.UTC.Format "2006-01-02T15:04:05.000Z"}}</createTime>
            <createdBy>arn:aws:iam::123456789012:root</createdBy>
            <defaultVersionNumber>{{.DefaultVersionNumber}}</defaultVersionNumber>
            <latestVersionNumber>{{.LatestVersionNumber}}</latestVersionNumber>
            <launchTemplateId>{{.ID}}</launchTemplateId>
            <launchTemplateName>{{esc .Name}}</launchTemplateName>
            <tagSet>{{range .SortedTags}}
                <item><key>{{esc .Key}}</key><value>{{esc .Value}}</value></item>{{end}}
            </tagSet>{{end}}`

// oneLaunchTemplateTmpl renders the response of an action that returns one launch template
// (CreateLaunchTemplate, DeleteLaunchTemplate): <{{.Action}}Response><launchTemplate>.
var oneLaunchTemplateTmpl = template.Must(template.New("lt").Funcs(funcs).Parse(`<?xml version="1.0" encoding="UTF-8"?>
<{{.Action}}Response xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
    <requestId>awstest-request</requestId>
    <launchTemplate>{{template "fields" .LT}}
    </launchTemplate>
</{{.Action}}Response>
` + ltFields))

var describeLaunchTemplatesTmpl = template.Must(template.New("dlt").Funcs(funcs).Parse(`<?xml version="1.0" encoding="UTF-8"?>
<DescribeLaunchTemplatesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
    <requestId>awstest-request</requestId>
    <launchTemplates>{{range .}}
        <item>{{template "fields" .}}
        </item>{{end}}
    </launchTemplates>
</DescribeLaunchTemplatesResponse>
` + ltFields))

// CreateLaunchTemplate renders a CreateLaunchTemplateResponse for lt.
func CreateLaunchTemplate(lt LaunchTemplate) Response {
	return oneLaunchTemplate("CreateLaunchTemplate", lt)
}

// DeleteLaunchTemplate renders a DeleteLaunchTemplateResponse for lt.
func DeleteLaunchTemplate(lt LaunchTemplate) Response {
	return oneLaunchTemplate("DeleteLaunchTemplate", lt)
}

func oneLaunchTemplate(action string, lt LaunchTemplate) Response {
	var buf bytes.Buffer
	if err := oneLaunchTemplateTmpl.Execute(&buf, struct {
		Action string
		LT     LaunchTemplate
	}{action, lt}); err != nil {
		panic(err)
	}
	return XML(buf.Bytes())
}

// DescribeLaunchTemplates renders a DescribeLaunchTemplatesResponse listing lts (none: an empty
// list, EC2's answer to a name filter that matches nothing).
func DescribeLaunchTemplates(lts ...LaunchTemplate) Response {
	var buf bytes.Buffer
	if err := describeLaunchTemplatesTmpl.Execute(&buf, lts); err != nil {
		panic(err)
	}
	return XML(buf.Bytes())
}

// CodeLaunchTemplateExists is EC2's error code for CreateLaunchTemplate with a taken name.
const CodeLaunchTemplateExists = "InvalidLaunchTemplateName.AlreadyExistsException"

// CodeLaunchTemplateIDNotFound is EC2's error code for a launch template ID that does not exist.
const CodeLaunchTemplateIDNotFound = "InvalidLaunchTemplateId.NotFound"

// LaunchTemplateStore answers CreateLaunchTemplate, DescribeLaunchTemplates and
// DeleteLaunchTemplate from memory, like EC2 does: created templates are listed (by the
// launch-template-name filter or LaunchTemplateName.N, else all, narrowed by tag:<key> and
// tag-key filters), creating a taken name fails with CodeLaunchTemplateExists, and deleting an
// unknown ID with CodeLaunchTemplateIDNotFound. Templates are created at Now.
type LaunchTemplateStore struct {
	srv     *Server
	now     time.Time
	byKey   map[string]LaunchTemplate
	created int
}

// SetNow sets the creation time of the templates created from now on.
func (st *LaunchTemplateStore) SetNow(t time.Time) {
	st.srv.mu.Lock()
	defer st.srv.mu.Unlock()
	st.now = t
}

// ServeLaunchTemplates installs a LaunchTemplateStore on the server, holding existing.
func (s *Server) ServeLaunchTemplates(existing ...LaunchTemplate) *LaunchTemplateStore {
	st := &LaunchTemplateStore{srv: s, now: time.Date(2026, 7, 20, 12, 0, 0, 0, time.UTC), byKey: map[string]LaunchTemplate{}}
	for _, lt := range existing {
		st.byKey[lt.Name] = lt
	}
	s.Handle("CreateLaunchTemplate", st.create)
	s.Handle("DescribeLaunchTemplates", st.describe)
	s.Handle("DeleteLaunchTemplate", st.delete)
	return st
}

func (st *LaunchTemplateStore) create(r Request) Response {
	st.srv.mu.Lock()
	defer st.srv.mu.Unlock()
	name := r.Form.Get("LaunchTemplateName")
	if _, ok := st.byKey[name]; ok {
		return EC2Error(http.StatusBadRequest, CodeLaunchTemplateExists,
			fmt.Sprintf("Launch template name already in use: %s", name))
	}
	tags := r.TagSpecifications()["launch-template"]
	st.created++
	lt := LaunchTemplate{ID: fmt.Sprintf("lt-%017x", st.created), Name: name, CreateTime: st.now, Tags: tags}
	st.byKey[name] = lt
	return CreateLaunchTemplate(lt)
}

func (st *LaunchTemplateStore) describe(r Request) Response {
	st.srv.mu.Lock()
	defer st.srv.mu.Unlock()
	filters := r.EC2Filters()
	names := append(filters["launch-template-name"], r.FormList("LaunchTemplateName")...)
	for _, id := range r.FormList("LaunchTemplateId") {
		for n, lt := range st.byKey {
			if lt.ID == id {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		for n := range st.byKey {
			names = append(names, n)
		}
	}
	var out []LaunchTemplate
	for _, n := range names {
		if lt, ok := st.byKey[n]; ok && lt.matchesTags(filters) {
			out = append(out, lt)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return DescribeLaunchTemplates(out...)
}

// matchesTags applies the tag:<key> (value in the list) and tag-key (key present) filters.
func (lt LaunchTemplate) matchesTags(filters map[string][]string) bool {
	for name, values := range filters {
		key, isTag := strings.CutPrefix(name, "tag:")
		switch {
		case isTag:
			if v, ok := lt.Tags[key]; !ok || !slices.Contains(values, v) {
				return false
			}
		case name == "tag-key":
			if !slices.ContainsFunc(values, func(k string) bool { _, ok := lt.Tags[k]; return ok }) {
				return false
			}
		}
	}
	return true
}

func (st *LaunchTemplateStore) delete(r Request) Response {
	st.srv.mu.Lock()
	defer st.srv.mu.Unlock()
	id := r.Form.Get("LaunchTemplateId")
	for name, lt := range st.byKey {
		if lt.ID == id {
			delete(st.byKey, name)
			return DeleteLaunchTemplate(lt)
		}
	}
	return EC2Error(http.StatusBadRequest, CodeLaunchTemplateIDNotFound,
		fmt.Sprintf("The specified launch template, with template ID %s, does not exist.", id))
}

// SetVersions sets the default and latest version numbers of the named template, as
// CreateLaunchTemplateVersion and ModifyLaunchTemplate would.
func (st *LaunchTemplateStore) SetVersions(name string, def, latest int) {
	st.srv.mu.Lock()
	defer st.srv.mu.Unlock()
	lt := st.byKey[name]
	lt.DefaultVersion, lt.LatestVersion = def, latest
	st.byKey[name] = lt
}

// Names returns the names of the templates in the store, sorted.
func (st *LaunchTemplateStore) Names() []string {
	st.srv.mu.Lock()
	defer st.srv.mu.Unlock()
	var out []string
	for n := range st.byKey {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// UserData decodes the base64 LaunchTemplateData.UserData of a CreateLaunchTemplate request.
func (r Request) UserData() ([]byte, error) {
	return base64.StdEncoding.DecodeString(r.Form.Get("LaunchTemplateData.UserData"))
}
