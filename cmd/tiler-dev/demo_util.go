package main

import (
	"bufio"
	"bytes"
	"strings"
)

// bufioReader reads a manifest file already in memory, as the YAML document splitter wants.
func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// stripYAMLComments drops comment and blank lines, so that a document of nothing but comments
// (a file header before the first ---) is recognised as empty and skipped.
func stripYAMLComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}
