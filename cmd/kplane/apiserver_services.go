package main

import (
	"net"

	"github.com/spf13/cobra"

	"github.com/kplane/kplane/pkg/apiserver"
)

// serviceOptions are the flags of Service address allocation, shared by
// `kplane apiserver` and `kplane up`.
type serviceOptions struct {
	clusterIPRange   string
	nodePortRange    string
	advertiseAddress string
}

func (o *serviceOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.clusterIPRange, "service-cluster-ip-range", apiserver.DefaultServiceClusterIPRange, "IPv4 CIDR the cluster IPs of Services are allocated from; its first address is the kubernetes Service's")
	f.StringVar(&o.nodePortRange, "service-node-port-range", apiserver.DefaultServiceNodePortRange, "port range, first-last, the node ports of Services are allocated from")
	f.StringVar(&o.advertiseAddress, "advertise-address", "", "IP the kubernetes Service's endpoints name (default: --bind-address when it is a specific non-loopback address, else 127.0.0.1)")
}

// apply sets the Service fields of cfg for a server listening on bindAddress.
func (o *serviceOptions) apply(cfg *apiserver.Config, bindAddress string) {
	cfg.ServiceClusterIPRange = o.clusterIPRange
	cfg.ServiceNodePortRange = o.nodePortRange
	cfg.AdvertiseAddress = o.advertiseAddress
	if cfg.AdvertiseAddress == "" {
		if ip := net.ParseIP(bindAddress); ip != nil && !ip.IsUnspecified() && !ip.IsLoopback() {
			cfg.AdvertiseAddress = bindAddress
		}
	}
}
