package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// FileConfig configures a FileSink, as kube-apiserver's --audit-log-*
// flags do.
type FileConfig struct {
	// Path is the log file. Required. It is created 0600 when missing.
	Path string
	// MaxSizeMB is the size in megabytes past which the file is rotated:
	// renamed to <name>-<time>.<ext> and started anew. Zero or negative
	// means 100, as kube-apiserver's default.
	MaxSizeMB int
	// MaxBackups is how many rotated files are kept; zero keeps all.
	MaxBackups int
	// MaxAgeDays is how many days rotated files are kept, by the time in
	// their names; zero keeps them regardless of age.
	MaxAgeDays int
	// Clock names rotated files and ages them. Default the real clock.
	Clock clock.PassiveClock
}

// backupTimeFormat is the time in rotated files' names (the format
// kube-apiserver's rotated audit logs use).
const backupTimeFormat = "2006-01-02T15-04-05.000"

// FileSink is an append-only file rotated by size, safe for concurrent use.
// It starts no goroutines: rotation and pruning happen in the Write that
// crosses the size.
type FileSink struct {
	cfg FileConfig
	max int64

	mu   sync.Mutex
	f    *os.File // nil until the first Write and after Close
	size int64    // bytes in f
}

// NewFileSink opens (creating or appending to) cfg.Path.
func NewFileSink(cfg FileConfig) (*FileSink, error) {
	if cfg.Path == "" {
		return nil, errors.New("audit: FileConfig.Path is required")
	}
	if cfg.MaxSizeMB <= 0 {
		cfg.MaxSizeMB = 100
	}
	if cfg.MaxBackups < 0 || cfg.MaxAgeDays < 0 {
		return nil, errors.New("audit: MaxBackups and MaxAgeDays must not be negative")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	s := &FileSink{cfg: cfg, max: int64(cfg.MaxSizeMB) << 20}
	if err := s.openLocked(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *FileSink) openLocked() error {
	if err := os.MkdirAll(filepath.Dir(s.cfg.Path), 0o700); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	f, err := os.OpenFile(s.cfg.Path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("audit log: %w", err)
	}
	s.f, s.size = f, st.Size()
	return nil
}

// Write appends p, rotating the file first when p would take it past the
// size limit (a p larger than the limit gets a file of its own).
func (s *FileSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return 0, errors.New("audit log: closed")
	}
	if s.size > 0 && s.size+int64(len(p)) > s.max {
		if err := s.rotateLocked(); err != nil {
			return 0, err
		}
	}
	n, err := s.f.Write(p)
	s.size += int64(n)
	return n, err
}

// Close closes the file. Writes after Close fail.
func (s *FileSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

func (s *FileSink) rotateLocked() error {
	if err := s.f.Close(); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	s.f = nil
	dir, base := filepath.Split(s.cfg.Path)
	ext := filepath.Ext(base)
	name := strings.TrimSuffix(base, ext)
	backup := filepath.Join(dir, name+"-"+s.cfg.Clock.Now().UTC().Format(backupTimeFormat)+ext)
	if err := os.Rename(s.cfg.Path, backup); err != nil {
		return fmt.Errorf("audit log: rotate: %w", err)
	}
	if err := s.openLocked(); err != nil {
		return err
	}
	return s.pruneLocked(dir, name, ext)
}

// pruneLocked removes the rotated files past MaxBackups or MaxAgeDays.
func (s *FileSink) pruneLocked(dir, name, ext string) error {
	if s.cfg.MaxBackups == 0 && s.cfg.MaxAgeDays == 0 {
		return nil
	}
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("audit log: prune: %w", err)
	}
	type backup struct {
		path string
		t    time.Time
	}
	var backups []backup
	for _, e := range entries {
		stamp, ok := strings.CutPrefix(e.Name(), name+"-")
		if !ok || e.IsDir() {
			continue
		}
		stamp, ok = strings.CutSuffix(stamp, ext)
		if !ok {
			continue
		}
		t, err := time.Parse(backupTimeFormat, stamp)
		if err != nil {
			continue
		}
		backups = append(backups, backup{filepath.Join(dir, e.Name()), t})
	}
	// Newest first.
	slices.SortFunc(backups, func(a, b backup) int { return b.t.Compare(a.t) })
	cutoff := s.cfg.Clock.Now().Add(-time.Duration(s.cfg.MaxAgeDays) * 24 * time.Hour)
	var errs []error
	for i, b := range backups {
		if (s.cfg.MaxBackups > 0 && i >= s.cfg.MaxBackups) || (s.cfg.MaxAgeDays > 0 && b.t.Before(cutoff)) {
			if err := os.Remove(b.path); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("audit log: prune: %w", errors.Join(errs...))
	}
	return nil
}
