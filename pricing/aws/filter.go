package aws

import (
	"fmt"
	"path"
	"strings"
)

// InstanceTypeFilter is an allow-list of instance types. Each entry is a family ("g5", matching
// every g5.* size), an exact type ("p5.48xlarge") or an EC2 wildcard pattern ("g6*", "p?.48xlarge").
// An empty filter allows every type.
type InstanceTypeFilter []string

// Validate checks every entry; errors name the entry.
func (f InstanceTypeFilter) Validate() error {
	for i, e := range f {
		if e == "" || strings.ContainsAny(e, " ,") {
			return fmt.Errorf("instanceTypes[%d] %q must be a family, a type or a wildcard pattern", i, e)
		}
		if _, err := path.Match(e, ""); err != nil {
			return fmt.Errorf("instanceTypes[%d] %q: %w", i, e, err)
		}
	}
	return nil
}

// Allows reports whether the filter admits the instance type name.
func (f InstanceTypeFilter) Allows(name string) bool {
	if len(f) == 0 {
		return true
	}
	family, _, _ := strings.Cut(name, ".")
	for _, e := range f {
		switch {
		case isPattern(e):
			if ok, _ := path.Match(e, name); ok {
				return true
			}
		case strings.Contains(e, "."):
			if e == name {
				return true
			}
		case e == family:
			return true
		}
	}
	return false
}

// EC2Values returns the values of an EC2 "instance-type" filter equivalent to f: families become
// "family.*". It returns nil for an empty filter, meaning no filter.
func (f InstanceTypeFilter) EC2Values() []string {
	var out []string
	for _, e := range f {
		if !isPattern(e) && !strings.Contains(e, ".") {
			e += ".*"
		}
		out = append(out, e)
	}
	return out
}

// ExactTypes returns the entries when every one names a single type, which is what the Pricing
// API's ANY_OF filter can express; ok is false otherwise.
func (f InstanceTypeFilter) ExactTypes() (types []string, ok bool) {
	if len(f) == 0 {
		return nil, false
	}
	for _, e := range f {
		if isPattern(e) || !strings.Contains(e, ".") {
			return nil, false
		}
	}
	return append([]string(nil), f...), true
}

func isPattern(e string) bool { return strings.ContainsAny(e, "*?[") }
