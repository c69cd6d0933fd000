package controlplane

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestWriteSchedulerConfig: the recommended GPU profile is written with the control plane's
// kubeconfig and leader election off, its profiles kept; a document of another kind is refused.
func TestWriteSchedulerConfig(t *testing.T) {
	profile, err := os.ReadFile("../../deploy/scheduler/gpu-mostallocated.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := &ControlPlane{dir: t.TempDir(), kubeconfig: "/run/kubeconfig", opts: Options{SchedulerConfig: profile}}
	args, err := c.schedulerArgs(1234)
	if err != nil {
		t.Fatal(err)
	}
	var path string
	for _, a := range args {
		if p, ok := strings.CutPrefix(a, "--config="); ok {
			path = p
		}
	}
	if path == "" {
		t.Fatalf("no --config in %v", args)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ClientConnection struct{ Kubeconfig string }
		LeaderElection   struct{ LeaderElect bool }
		Profiles         []struct {
			PluginConfig []struct {
				Name string
				Args struct {
					ScoringStrategy struct {
						Type      string
						Resources []struct {
							Name   string
							Weight int
						}
					}
				}
			}
		}
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.ClientConnection.Kubeconfig != "/run/kubeconfig" || cfg.LeaderElection.LeaderElect {
		t.Errorf("kubeconfig %q, leaderElect %t", cfg.ClientConnection.Kubeconfig, cfg.LeaderElection.LeaderElect)
	}
	if len(cfg.Profiles) != 1 || len(cfg.Profiles[0].PluginConfig) != 1 ||
		cfg.Profiles[0].PluginConfig[0].Args.ScoringStrategy.Type != "MostAllocated" ||
		cfg.Profiles[0].PluginConfig[0].Args.ScoringStrategy.Resources[0].Name != "nvidia.com/gpu" {
		t.Errorf("profiles not kept:\n%s", b)
	}

	c.opts.SchedulerConfig = []byte("apiVersion: v1\nkind: ConfigMap\n")
	if _, err := c.schedulerArgs(1234); err == nil || !strings.Contains(err.Error(), "kind must be KubeSchedulerConfiguration") {
		t.Errorf("a ConfigMap as SchedulerConfig: %v", err)
	}
}
