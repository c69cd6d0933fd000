package catalog

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	sigsjson "sigs.k8s.io/json"
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

// Decode reads a catalog in its JSON form, strictly: unknown and duplicate fields are errors, and
// so is anything after the catalog's object (a second catalog appended would be ignored).
func Decode(r io.Reader) (*Catalog, error) {
	dec := json.NewDecoder(r)
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("decoding catalog: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("decoding catalog: data after the catalog's object at byte %d", dec.InputOffset())
	}
	var c Catalog
	strict, err := sigsjson.UnmarshalStrict(raw, &c)
	if err == nil && len(strict) > 0 {
		err = errors.Join(strict...)
	}
	if err != nil {
		return nil, fmt.Errorf("decoding catalog: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c.Sort()
	return &c, nil
}
