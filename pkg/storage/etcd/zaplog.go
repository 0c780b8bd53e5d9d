package etcd

import (
	"context"
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newZapLogger returns a zap logger, as the etcd libraries require, that
// forwards warnings and errors to l and drops everything else. A nil l
// gives a logger that drops everything.
func newZapLogger(l *slog.Logger) *zap.Logger {
	if l == nil {
		return zap.NewNop()
	}
	return zap.New(&slogCore{logger: l})
}

// slogCore is a zapcore.Core writing to a slog.Logger.
type slogCore struct {
	logger *slog.Logger
	attrs  []any
}

func (c *slogCore) Enabled(l zapcore.Level) bool { return l >= zapcore.WarnLevel }

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	attrs := append(append([]any(nil), c.attrs...), fieldAttrs(fields)...)
	return &slogCore{logger: c.logger, attrs: attrs}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	level := slog.LevelWarn
	if e.Level >= zapcore.ErrorLevel {
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
