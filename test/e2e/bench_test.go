package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// benchJSON is the part of `kplane bench --json` the smoke test checks.
type benchJSON struct {
	Replicas       int     `json:"replicas"`
	Nodes          int     `json:"nodes"`
	Storage        string  `json:"storage"`
	StartupSeconds float64 `json:"startup_seconds"`
	Create         benchPhaseJSON
	Rollout        benchPhaseJSON
	Delete         benchPhaseJSON
	Process        *struct {
		PeakRSSBytes int64   `json:"peak_rss_bytes"`
		RSSBytes     int64   `json:"rss_bytes"`
		CPUSeconds   float64 `json:"cpu_seconds"`
	} `json:"process"`
}

type benchPhaseJSON struct {
	Seconds    float64            `json:"seconds"`
	Milestones map[string]float64 `json:"milestones"`
	Requests   struct {
		Total          int64            `json:"total"`
		ByVerb         map[string]int64 `json:"by_verb"`
		ByVerbResource map[string]int64 `json:"by_verb_resource"`
	} `json:"requests"`
	Etcd *struct {
		Puts      int64 `json:"puts"`
		Deletes   int64 `json:"deletes"`
		WALFsyncs int64 `json:"wal_fsyncs"`
	} `json:"etcd"`
	CPUSeconds *float64 `json:"cpu_seconds"`
}

// runBench runs `kplane bench` with its temporary files in a directory of
// the test's, and checks it left nothing there.
func runBench(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	tmp := t.TempDir()
	cmd := exec.Command(kplaneBin, append([]string{"bench"}, args...)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	left, readErr := os.ReadDir(tmp)
	if readErr != nil {
		t.Fatal(readErr)
	}
	if len(left) > 0 {
		t.Errorf("kplane bench %s left %s in its temporary directory", strings.Join(args, " "), left[0].Name())
	}
	return out.String(), errOut.String(), err
}

// `kplane bench` on a small Deployment completes every phase with
// plausible, ordered figures, on both storage backends.
func TestBenchSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a Deployment of 50 replicas through two kplane ups")
	}
	for _, storage := range []string{"etcd", "memory"} {
		t.Run(storage, func(t *testing.T) {
			args := []string{"--replicas", "50", "--nodes", "3", "--json", "--timeout", "3m", "--storage", storage}
			profiles := t.TempDir()
			cpuProfile, memProfile := filepath.Join(profiles, "cpu.pprof"), filepath.Join(profiles, "mem.pprof")
			if storage == "memory" {
				args = append(args, "--cpuprofile", cpuProfile, "--memprofile", memProfile)
			}
			stdout, stderr, err := runBench(t, args...)
			if err != nil {
				t.Fatalf("kplane bench: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
			}
			var r benchJSON
			if err := json.Unmarshal([]byte(stdout), &r); err != nil {
				t.Fatalf("decode %s: %v", stdout, err)
			}
			if r.Replicas != 50 || r.Nodes != 3 || r.Storage != storage || r.StartupSeconds <= 0 {
				t.Errorf("header: %+v", r)
			}
			m := r.Create.Milestones
			for _, k := range []string{"first_pod_created", "pods_created", "pods_scheduled", "pods_ready", "available"} {
				if m[k] <= 0 {
					t.Errorf("create milestone %s = %v", k, m[k])
				}
			}
			if !(m["first_pod_created"] <= m["pods_created"] && m["pods_created"] <= m["pods_scheduled"] &&
				m["pods_scheduled"] <= m["pods_ready"] && m["pods_ready"] <= m["available"]) {
				t.Errorf("create milestones out of order: %v", m)
			}
			if r.Create.Seconds != m["available"] {
				t.Errorf("create took %v, its last milestone is at %v", r.Create.Seconds, m["available"])
			}
			checkPhase := func(name string, p benchPhaseJSON, milestones []string, verbs ...string) {
				t.Helper()
				for _, k := range milestones {
					if p.Milestones[k] <= 0 || p.Milestones[k] > p.Seconds {
						t.Errorf("%s milestone %s = %v (phase %v s)", name, k, p.Milestones[k], p.Seconds)
					}
				}
				for _, v := range verbs {
					if p.Requests.ByVerb[v] <= 0 {
						t.Errorf("%s: no %s requests: %v", name, v, p.Requests.ByVerb)
					}
				}
				var sum int64
				for _, n := range p.Requests.ByVerb {
					sum += n
				}
				if sum != p.Requests.Total || len(p.Requests.ByVerbResource) == 0 {
					t.Errorf("%s requests: total %d, by verb %v, by resource %v", name, p.Requests.Total, p.Requests.ByVerb, p.Requests.ByVerbResource)
				}
				if p.CPUSeconds == nil || *p.CPUSeconds <= 0 {
					t.Errorf("%s: cpu_seconds %v", name, p.CPUSeconds)
				}
				switch {
				case storage == "memory" && p.Etcd != nil:
					t.Errorf("%s: etcd figures with memory storage: %+v", name, *p.Etcd)
				case storage == "etcd" && (p.Etcd == nil || p.Etcd.Puts <= 0 || p.Etcd.WALFsyncs <= 0):
					t.Errorf("%s: etcd figures %+v", name, p.Etcd)
				}
			}
			checkPhase("create", r.Create, []string{"available"}, "POST", "PUT")
			if got := r.Create.Requests.ByVerbResource["POST pods"]; got != 50 {
				t.Errorf("create: %d pod creates, want 50", got)
			}
			checkPhase("rollout", r.Rollout, []string{"new_replicaset_created", "first_new_pod_created", "new_pods_available", "old_replicasets_scaled_down", "complete"}, "PATCH", "POST", "DELETE")
			checkPhase("delete", r.Delete, []string{"deployment_gone", "replicasets_gone", "complete"}, "DELETE")
			if storage == "memory" {
				// kplane up wrote both when bench stopped it with SIGTERM.
				for _, p := range []string{cpuProfile, memProfile} {
					if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
						t.Errorf("profile %s: %v", p, err)
					}
				}
			}
			if r.Process == nil || r.Process.PeakRSSBytes < r.Process.RSSBytes || r.Process.RSSBytes <= 0 || r.Process.CPUSeconds <= 0 {
				t.Errorf("process: %+v", r.Process)
			}
		})
	}
}

func TestBenchFailsClearly(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--replicas", "0"}, "--replicas must be at least 1, not 0"},
		{[]string{"--storage", "foo"}, `--storage must be etcd or memory, not "foo"`},
		{[]string{"--image-from", "a", "--image-to", "a"}, "the rollout needs a new image"},
		{[]string{"--timeout", "0s"}, "--timeout must be positive"},
		// These two start a kplane up and must stop and remove it.
		{[]string{"--replicas", "1000", "--nodes", "1", "--storage", "memory"}, "do not fit on 1 nodes"},
		{[]string{"--timeout", "50ms", "--storage", "memory"}, "timed out after 50ms in phase startup"},
	} {
		stdout, stderr, err := runBench(t, tc.args...)
		if err == nil || !strings.Contains(stderr, tc.want) {
			t.Errorf("bench %v: err %v, want a message with %q; stdout:\n%s\nstderr:\n%s", tc.args, err, tc.want, stdout, stderr)
		}
	}
}
