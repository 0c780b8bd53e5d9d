package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// kubernetesVersion is the Kubernetes API version kplane serves.
const kubernetesVersion = "v1.37.2"

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the kplane version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := "(devel)"
			if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
				v = info.Main.Version
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "kplane %s (Kubernetes API %s, %s %s/%s)\n", v, kubernetesVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
