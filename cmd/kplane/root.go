package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// logOptions are the logging flags every long-running command has.
type logOptions struct {
	level  string
	format string
}

func (o *logOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.level, "log-level", "info", "log level: debug, info, warn or error")
	cmd.Flags().StringVar(&o.format, "log-format", "text", "log format: text or json")
}

// logger builds the slog.Logger the flags ask for, writing to stderr.
func (o *logOptions) logger() (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(o.format) {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format must be text or json, not %q", o.format)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "kplane",
		Short:         "kplane is a lightweight control plane that speaks the Kubernetes API",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newUpCommand(), newAPIServerCommand(), newControllerManagerCommand(),
		newGetCommand(), newApplyCommand(), newDeleteCommand(), newScaleCommand(), newRolloutCommand(), newBenchCommand(), newVersionCommand())
	return root
}
