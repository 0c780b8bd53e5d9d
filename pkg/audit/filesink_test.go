package audit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"
)

func TestFileSinkRotates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	clk := testclock.NewFakePassiveClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	s, err := NewFileSink(FileConfig{Path: path, MaxSizeMB: 1, MaxBackups: 2, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	line := append(bytes.Repeat([]byte("x"), 400<<10), '\n') // three lines fill 1 MiB
	for i := range 7 {
		clk.SetTime(clk.Now().Add(time.Minute))
		if _, err := s.Write(line); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	names := files(t, dir)
	// 7 lines, 2 per file: rotated at minutes 3, 5 and 7, the oldest pruned.
	want := []string{"audit-2026-03-01T00-05-00.000.log", "audit-2026-03-01T00-07-00.000.log", "audit.log"}
	if !slices.Equal(names, want) {
		t.Fatalf("files %v, want %v", names, want)
	}
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > 1<<20 {
			t.Errorf("%s is %d bytes, over the limit", n, fi.Size())
		}
		if n == "audit.log" && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", n, fi.Mode().Perm())
		}
	}
}

func TestFileSinkPrunesByAge(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	clk := testclock.NewFakePassiveClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	s, err := NewFileSink(FileConfig{Path: path, MaxSizeMB: 1, MaxAgeDays: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := append(bytes.Repeat([]byte("y"), 700<<10), '\n') // one line per file
	for range 4 {
		if _, err := s.Write(big); err != nil {
			t.Fatal(err)
		}
		clk.SetTime(clk.Now().Add(24 * time.Hour))
	}
	// Rotated on 03-02, 03-03 and 03-04; on 03-04 the 03-02 one is over a day old.
	want := []string{"audit-2026-03-03T00-00-00.000.log", "audit-2026-03-04T00-00-00.000.log", "audit.log"}
	if got := files(t, dir); !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
}

func TestFileSinkAppendsAfterRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "audit.log")
	for _, s := range []string{"a\n", "b\n"} {
		fs, err := NewFileSink(FileConfig{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fs.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
		if err := fs.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := fs.Write([]byte("c")); err == nil {
			t.Fatal("write after Close succeeded")
		}
	}
	data, err := os.ReadFile(path)
	if err != nil || string(data) != "a\nb\n" {
		t.Fatalf("%q %v", data, err)
	}
}

func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestAuditorWritesJSONLines(t *testing.T) {
	var buf bytes.Buffer
	clk := testclock.NewFakePassiveClock(time.Date(2026, 3, 1, 0, 0, 0, 123456000, time.UTC))
	a, err := New(Config{Policy: &Policy{Rules: []PolicyRule{{Level: LevelMetadata}}}, Sink: &buf, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	a.Write(&Event{Level: LevelMetadata, AuditID: "id1", Stage: StageResponseComplete, Verb: "get", RequestURI: "/api",
		ResponseStatus: &metav1.Status{Code: 200}})
	a.Write(&Event{Level: LevelNone, AuditID: "id2"})
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one line (None is not written), got %q", buf.String())
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"kind": "Event", "apiVersion": "audit.k8s.io/v1", "auditID": "id1", "stage": "ResponseComplete",
		"stageTimestamp": "2026-03-01T00:00:00.123456Z", "level": "Metadata"} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
}

func TestStripManagedFields(t *testing.T) {
	in := `{"kind":"List","metadata":{"managedFields":[1]},"items":[{"metadata":{"name":"a","managedFields":[{"manager":"m"}]}}]}`
	got := string(StripManagedFields(json.RawMessage(in)))
	if strings.Contains(got, "managedFields") || !strings.Contains(got, `"name":"a"`) {
		t.Fatalf("%s", got)
	}
	if got := string(StripManagedFields(json.RawMessage(`[1,2]`))); got != `[1,2]` {
		t.Fatalf("non-object changed: %s", got)
	}
}
