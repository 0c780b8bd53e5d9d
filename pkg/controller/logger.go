package controller

import (
	"context"
	"log/slog"
)

type loggerKey struct{}

// WithLogger returns a copy of ctx that carries logger. A Controller hands
// its SyncHandler a context whose logger already has the controller's name
// and the key.
func WithLogger(ctx context.Context, logger *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, logger)
}

// LoggerFrom returns the logger ctx carries, or slog.Default() if none.
func LoggerFrom(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok && l != nil {
		return l
	}
	return slog.Default()
}
