// Command gen builds the embedded catalogs (api/catalog/data/*.json) from the CSV files in
// testdata/catalog. Run it through `go generate ./api/catalog`.
package main

import (
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tiler-dev/tiler/api"

	"github.com/tiler-dev/tiler/api/catalog"
)

type region struct {
	name, provider, region string
	zones                  []string
	cpuFrom                string // region whose general-purpose list is used
}

var regions = []region{
	{"aws-us-east-1", "aws", "us-east-1", []string{"us-east-1a", "us-east-1b", "us-east-1c"}, "us-east-1"},
	{"aws-us-west-2", "aws", "us-west-2", []string{"us-west-2a", "us-west-2b", "us-west-2c"}, "us-east-1"},
	{"gcp-us-central1", "gcp", "us-central1", []string{"us-central1-a", "us-central1-b", "us-central1-c"}, ""},
}

func main() {
	in := flag.String("in", "../../testdata/catalog", "folder with the source CSV files")
	out := flag.String("out", "data", "folder for the generated JSON catalogs")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	gpuRows, err := readCSV(filepath.Join(in, "gpu-catalog.csv"))
	if err != nil {
		return err
	}
	cpuRows, err := readCSV(filepath.Join(in, "aws-cpu-instance-types.csv"))
	if err != nil {
		return err
	}
	for _, r := range regions {
		c, err := build(r, gpuRows, cpuRows)
		if err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		b, err := json.MarshalIndent(c, "", " ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, r.name+".json"), append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func build(r region, gpuRows, cpuRows []map[string]string) (*catalog.Catalog, error) {
	c := &catalog.Catalog{Name: r.name, Provider: r.provider, Region: r.region, Zones: r.zones,
		Source: "testdata/catalog (see its README): gpu-catalog.csv, aws-cpu-instance-types.csv"}
	for _, row := range gpuRows {
		if row["provider"] != r.provider || row["region"] != r.region {
			continue
		}
		t, err := gpuType(row, r.zones)
		if err != nil {
			return nil, err
		}
		if len(t.Offerings) > 0 { // a type with no known price cannot be bought
			c.Types = append(c.Types, t)
		}
	}
	for _, row := range cpuRows {
		if r.cpuFrom == "" || row["region"] != r.cpuFrom {
			continue
		}
		t, err := cpuType(row, r.zones)
		if err != nil {
			return nil, err
		}
		c.Types = append(c.Types, t)
	}
	c.Sort()
	return c, c.Validate()
}

func gpuType(row map[string]string, zones []string) (catalog.InstanceType, error) {
	vcpu, mem, err := shape(row)
	if err != nil {
		return catalog.InstanceType{}, err
	}
	count, err := strconv.Atoi(row["gpu_count"])
	if err != nil {
		return catalog.InstanceType{}, fmt.Errorf("%s: gpu_count: %w", row["instance_type"], err)
	}
	gmem, err := strconv.ParseFloat(row["gpu_memory_gib"], 64)
	if err != nil {
		return catalog.InstanceType{}, fmt.Errorf("%s: gpu_memory_gib: %w", row["instance_type"], err)
	}
	// The facts of the model (product, architecture, compute capability) with the row's count and
	// memory: the CSV is the source of the catalog's shapes.
	g, _ := catalog.GPUFacts(row["gpu_model"])
	g.Count, g.MemoryMiB = count, int64(gmem*1024)
	t := catalog.InstanceType{Name: api.InstanceTypeName(row["instance_type"]), VCPU: vcpu, MemoryMiB: mem,
		Arch: "amd64", GPU: g, MaxPods: catalog.DefaultMaxPods}
	t.Offerings, err = offerings(row, zones)
	return t, err
}

func cpuType(row map[string]string, zones []string) (catalog.InstanceType, error) {
	vcpu, mem, err := shape(row)
	if err != nil {
		return catalog.InstanceType{}, err
	}
	t := catalog.InstanceType{Name: api.InstanceTypeName(row["instance_type"]), VCPU: vcpu, MemoryMiB: mem,
		Arch: "amd64", MaxPods: catalog.DefaultMaxPods}
	t.Offerings, err = offerings(row, zones)
	return t, err
}

func shape(row map[string]string) (int, int64, error) {
	vcpu, err := strconv.Atoi(row["vcpu"])
	if err != nil {
		return 0, 0, fmt.Errorf("%s: vcpu: %w", row["instance_type"], err)
	}
	gib, err := strconv.ParseFloat(row["memory_gib"], 64)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: memory_gib: %w", row["instance_type"], err)
	}
	return vcpu, int64(gib * 1024), nil
}

// offerings gives every zone the row's on-demand price and, when the row has one, its spot price.
func offerings(row map[string]string, zones []string) ([]catalog.ZonePrice, error) {
	var out []catalog.ZonePrice
	for _, col := range []struct {
		name string
		ct   api.CapacityType
	}{{"on_demand_usd_hour", api.OnDemand}, {"spot_usd_hour", api.Spot}} {
		v := strings.TrimSpace(row[col.name])
		if v == "" {
			continue
		}
		p, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", row["instance_type"], col.name, err)
		}
		for _, z := range zones {
			out = append(out, catalog.ZonePrice{Zone: z, CapacityType: col.ct, PricePerHour: p})
		}
	}
	return out, nil
}

func readCSV(path string) ([]map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	var rows []map[string]string
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		m := map[string]string{}
		for i, h := range header {
			m[h] = rec[i]
		}
		rows = append(rows, m)
	}
}
