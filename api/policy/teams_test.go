package policy

import (
	"os"
	"strings"
	"testing"
)

// TestTeamResolver: named namespaces, selected namespaces, none, and a namespace two teams claim.
func TestTeamResolver(t *testing.T) {
	b, err := os.ReadFile("../../testdata/config/policy-teams.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	r := p.NewTeamResolver()
	cases := []struct {
		ns     string
		labels map[string]string
		want   string
	}{
		{"chat", nil, "inference"},
		{"embed", map[string]string{"x": "y"}, "inference"},
		{"lab", map[string]string{"tiler.dev/team": "research"}, "research"},
		{"lab", nil, ""}, // no Namespace object: only named namespaces match
		{"other", map[string]string{"tiler.dev/team": "sales"}, ""},
	}
	for _, c := range cases {
		team, err := r.TeamOf(c.ns, c.labels)
		if err != nil {
			t.Fatalf("%s: %v", c.ns, err)
		}
		got := ""
		if team != nil {
			got = team.Name
		}
		if got != c.want {
			t.Errorf("namespace %s %v: team %q, want %q", c.ns, c.labels, got, c.want)
		}
	}
	_, err = r.TeamOf("chat", map[string]string{"tiler.dev/team": "research"})
	if err == nil || !strings.Contains(err.Error(), `namespace "chat" belongs to several teams: "inference" (teams[0]), "research" (teams[1])`) {
		t.Errorf("conflict: %v", err)
	}
	if !p.Teams[0].AllowsPool("gpu-od") || p.Teams[0].AllowsPool("gpu-spot") || !(&Team{}).AllowsPool("any") {
		t.Error("AllowsPool")
	}
}
