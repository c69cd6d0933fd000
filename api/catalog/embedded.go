package catalog

import (
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

//go:generate go run ./gen -in ../../testdata/catalog -out data

//go:embed data/*.json
var embedded embed.FS

// DefaultName is the embedded catalog used when none is named.
const DefaultName = "aws-us-east-1"

// EmbeddedNames lists the embedded catalogs.
func EmbeddedNames() []string {
	entries, _ := embedded.ReadDir("data")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".json"))
	}
	sort.Strings(names)
	return names
}

// Embedded returns a fresh copy of the named embedded catalog.
func Embedded(name string) (*Catalog, error) {
	b, err := embedded.ReadFile("data/" + name + ".json")
	if err != nil {
		return nil, fmt.Errorf("unknown catalog %q (embedded: %s)", name, strings.Join(EmbeddedNames(), ", "))
	}
	return Decode(strings.NewReader(string(b)))
}

// Decode reads a catalog in its JSON form, strictly: unknown fields are errors.
func Decode(r io.Reader) (*Catalog, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var c Catalog
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("decoding catalog: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c.Sort()
	return &c, nil
}
