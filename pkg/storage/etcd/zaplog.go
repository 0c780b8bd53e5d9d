package etcd

import (
	"context"
	"log/slog"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newZapLogger returns a zap logger, as the etcd libraries require, that
// forwards warnings and errors to l and drops everything else. A nil l
// gives a logger that drops everything. While quiet (when not nil) is set,
// everything is logged at debug level: an embedded member being closed
// reports its listeners' closing as errors, which they are not.
func newZapLogger(l *slog.Logger, quiet *atomic.Bool) *zap.Logger {
	if l == nil {
		return zap.NewNop()
	}
	return zap.New(&slogCore{logger: l, quiet: quiet})
}

// benign are the warnings an embedded member always gives for the setup
// kplane chooses on purpose (one loopback port for gRPC and HTTP, simple
// auth tokens with no auth enabled); they are logged at debug level.
var benign = map[string]bool{
	"Running http and grpc server on single port. This is not recommended for production.": true,
	"simple token is not cryptographically signed":                                         true,
}

// slogCore is a zapcore.Core writing to a slog.Logger.
type slogCore struct {
	logger *slog.Logger
	attrs  []any
	// quiet, when not nil and set, demotes every record to debug.
	quiet *atomic.Bool
}

func (c *slogCore) Enabled(l zapcore.Level) bool { return l >= zapcore.WarnLevel }

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	attrs := append(append([]any(nil), c.attrs...), fieldAttrs(fields)...)
	return &slogCore{logger: c.logger, attrs: attrs, quiet: c.quiet}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	level := slog.LevelWarn
	switch {
	case (c.quiet != nil && c.quiet.Load()) || benign[e.Message]:
		level = slog.LevelDebug
	case e.Level >= zapcore.ErrorLevel:
		level = slog.LevelError
	}
	args := append(append([]any(nil), c.attrs...), fieldAttrs(fields)...)
	if e.LoggerName != "" {
		args = append(args, slog.String("component", e.LoggerName))
	}
	c.logger.Log(context.Background(), level, "etcd: "+e.Message, args...)
	return nil
}

func (c *slogCore) Sync() error { return nil }

func fieldAttrs(fields []zapcore.Field) []any {
	if len(fields) == 0 {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	out := make([]any, 0, len(enc.Fields))
	for k, v := range enc.Fields {
		out = append(out, slog.Any(k, v))
	}
	return out
}
