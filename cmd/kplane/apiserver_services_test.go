package main

import (
	"testing"

	"github.com/kplane/kplane/pkg/apiserver"
)

func TestServiceFlags(t *testing.T) {
	for _, cmd := range []string{"apiserver", "up"} {
		c := newAPIServerCommand()
		if cmd == "up" {
			c = newUpCommand()
		}
		if err := c.Flags().Parse([]string{"--service-cluster-ip-range=10.0.0.0/16", "--service-node-port-range=31000-31100"}); err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		for name, want := range map[string]string{"service-cluster-ip-range": "10.0.0.0/16", "service-node-port-range": "31000-31100"} {
			if f := c.Flags().Lookup(name); f == nil || f.Value.String() != want {
				t.Errorf("%s --%s: %v", cmd, name, f)
			}
		}
	}
	var cfg apiserver.Config
	o := serviceOptions{clusterIPRange: "10.0.0.0/16", nodePortRange: "31000-31100"}
	o.apply(&cfg, "192.168.1.5")
	if cfg.ServiceClusterIPRange != "10.0.0.0/16" || cfg.ServiceNodePortRange != "31000-31100" || cfg.AdvertiseAddress != "192.168.1.5" {
		t.Errorf("config %+v", cfg)
	}
	cfg = apiserver.Config{}
	o.apply(&cfg, "127.0.0.1")
	if cfg.AdvertiseAddress != "" {
		t.Errorf("loopback advertised: %q", cfg.AdvertiseAddress)
	}
}
