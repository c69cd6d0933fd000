// Package golden reads and writes the sectioned text files of golden tests and scenarios: free
// text (the head), then sections, each introduced by a "-- name --" line, as in
// simulator/testdata/*.txt and fidelity/testdata/*.txt. It is the one parser of that format.
package golden

import "strings"

// File is a sectioned text file.
type File struct {
	// Head is the text before the first section line, with its newlines.
	Head string
	// Sections are the sections in file order.
	Sections []Section
}

// Section is one section of a File.
type Section struct {
	Name string
	// Text is the lines between the section's "-- name --" line and the next one, with their
	// newlines.
	Text string
}

// Parse splits s into its head and sections. A section line is one that, trimmed of spaces,
// starts with "-- ", ends with " --" and names something in between; the name is what lies
// between the dashes. Every other line belongs to the head or to the section above it.
func Parse(s string) *File {
	f := &File{}
	cur := -1 // the head
	var b strings.Builder
	flush := func() {
		if cur < 0 {
			f.Head = b.String()
		} else {
			f.Sections[cur].Text = b.String()
		}
		b.Reset()
	}
	for _, line := range strings.SplitAfter(s, "\n") {
		if name, ok := sectionName(line); ok {
			flush()
			f.Sections = append(f.Sections, Section{Name: name})
			cur = len(f.Sections) - 1
			continue
		}
		b.WriteString(line)
	}
	flush()
	return f
}

// sectionName returns the name of a section line.
func sectionName(line string) (string, bool) {
	t := strings.TrimSpace(line)
	if len(t) < len("-- x --") || !strings.HasPrefix(t, "-- ") || !strings.HasSuffix(t, " --") {
		return "", false
	}
	return t[len("-- ") : len(t)-len(" --")], true
}

// Get returns the text of the named section and whether the file has it. When a name repeats,
// the last section of that name counts, as a later definition overrides an earlier one.
func (f *File) Get(name string) (string, bool) {
	for i := len(f.Sections) - 1; i >= 0; i-- {
		if f.Sections[i].Name == name {
			return f.Sections[i].Text, true
		}
	}
	return "", false
}

// Text returns the text of the named section, "" when the file has none.
func (f *File) Text(name string) string {
	text, _ := f.Get(name)
	return text
}

// Set replaces the text of the named section (the last one, as Get reads), or appends the
// section when the file has none of that name.
func (f *File) Set(name, text string) {
	for i := len(f.Sections) - 1; i >= 0; i-- {
		if f.Sections[i].Name == name {
			f.Sections[i].Text = text
			return
		}
	}
	f.Sections = append(f.Sections, Section{Name: name, Text: text})
}

// Format renders the file: the head, then each section as its "-- name --" line and its text.
// Parse(f.Format()) gives f back when the head and every section's text are empty or end with
// a newline.
func (f *File) Format() string {
	var b strings.Builder
	b.WriteString(f.Head)
	for _, s := range f.Sections {
		b.WriteString("-- " + s.Name + " --\n")
		b.WriteString(s.Text)
	}
	return b.String()
}
