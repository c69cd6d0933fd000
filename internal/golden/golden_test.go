package golden

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const sample = `A scenario.
-- meta --
name: x
  -- policy.yaml --  
a: 1
-- --
--x--
-- objects.yaml --
`

func TestParse(t *testing.T) {
	f := Parse(sample)
	want := &File{Head: "A scenario.\n", Sections: []Section{
		{Name: "meta", Text: "name: x\n"},
		// Spaces around a section line are allowed; "-- --" and "--x--" name nothing.
		{Name: "policy.yaml", Text: "a: 1\n-- --\n--x--\n"},
		{Name: "objects.yaml", Text: ""},
	}}
	if diff := cmp.Diff(want, f); diff != "" {
		t.Fatalf("Parse (-want +got):\n%s", diff)
	}
	if text, ok := f.Get("objects.yaml"); !ok || text != "" {
		t.Errorf("Get(objects.yaml) = %q, %v; want an empty section", text, ok)
	}
	if text, ok := f.Get("plan.txt"); ok || text != "" || f.Text("plan.txt") != "" {
		t.Errorf("Get(plan.txt) = %q, %v; want none", text, ok)
	}
}

func TestParseWithoutSections(t *testing.T) {
	if diff := cmp.Diff(&File{Head: "just text\n"}, Parse("just text\n")); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
}

func TestRepeatedNameTheLastCounts(t *testing.T) {
	f := Parse("-- a --\n1\n-- a --\n2\n")
	if f.Text("a") != "2\n" {
		t.Errorf("Text(a) = %q, want the last section's", f.Text("a"))
	}
	f.Set("a", "3\n")
	if got := f.Format(); got != "-- a --\n1\n-- a --\n3\n" {
		t.Errorf("Set replaced the wrong section:\n%s", got)
	}
}

func TestSetAndFormatRoundTrip(t *testing.T) {
	in := "head\n-- snapshot.yaml --\nkind: List\n-- plan.txt --\nold\n"
	f := Parse(in)
	if got := f.Format(); got != in {
		t.Fatalf("Format(Parse(in)) = %q, want %q", got, in)
	}
	f.Set("plan.txt", "new\n")
	f.Set("notes", "appended\n")
	want := "head\n-- snapshot.yaml --\nkind: List\n-- plan.txt --\nnew\n-- notes --\nappended\n"
	if got := f.Format(); got != want {
		t.Errorf("after Set:\n%s\nwant:\n%s", got, want)
	}
	if diff := cmp.Diff(f, Parse(want)); diff != "" {
		t.Errorf("Parse(Format) (-want +got):\n%s", diff)
	}
}
