package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
)

// benchOptions are the flags of `kplane bench`.
type benchOptions struct {
	replicas   int
	nodes      int
	storage    string
	timeout    time.Duration
	json       bool
	cpuProfile string
	memProfile string
	imageFrom  string
	imageTo    string
}

// benchNamespace is where the bench creates its Deployment.
const benchNamespace = "kplane-bench"

// benchStopWait bounds how long the child may take to shut down after
// SIGTERM (writing its profiles, flushing etcd) before it is killed.
const benchStopWait = time.Minute

func newBenchCommand() *cobra.Command {
	o := &benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure a Deployment's create, rollout and delete on a fresh kplane up",
		Long: `Run a scale benchmark: start 'kplane up' as a child process on a
temporary data dir and a free port, with --nodes simulated nodes and the
--storage backend, and drive it as the admin of the kubeconfig it writes.

Phases, timed from the request that starts them by the watch events (pods,
ReplicaSets and Deployments of the kplane-bench namespace) that show each
milestone:
  create   a Deployment of --replicas pods of --image-from: first pod and all
           pods created, all scheduled, all Running and Ready, the Deployment
           Available (availableReplicas = replicas at its generation)
  rollout  the pod template's image patched to --image-to: the new
           ReplicaSet has all pods available, the old ones are scaled to 0
           and every old pod is gone
  delete   the Deployment deleted with propagationPolicy Background: no
           ReplicaSet and no pod left

For each phase it reports the API requests by verb and resource (the change
of apiserver_request_total), etcd's puts, deletes, transactions and WAL
fsyncs (with --storage=etcd), and the child's CPU time; at the end the
child's peak and final resident memory and CPU seconds (Linux only).
--cpuprofile and --memprofile make the child write its profiles when it
stops. The child and its data dir are always removed; a phase that does not
finish within --timeout (counted from the start) fails the command with the
counts it reached.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.replicas, "replicas", 1000, "replicas of the Deployment")
	f.IntVar(&o.nodes, "nodes", 12, "simulated nodes of the child kplane up")
	f.StringVar(&o.storage, "storage", "etcd", "storage of the child: etcd (embedded) or memory")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "bound of the whole run, startup included")
	f.BoolVar(&o.json, "json", false, "print the results as one JSON object")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "have the child write a CPU profile of its whole run to this file")
	f.StringVar(&o.memProfile, "memprofile", "", "have the child write a heap profile to this file when it stops")
	f.StringVar(&o.imageFrom, "image-from", "registry.k8s.io/pause:3.9", "image the Deployment is created with")
	f.StringVar(&o.imageTo, "image-to", "registry.k8s.io/pause:3.10", "image the rollout changes to")
	return cmd
}

func (o *benchOptions) validate() error {
	switch {
	case o.replicas < 1:
		return fmt.Errorf("--replicas must be at least 1, not %d", o.replicas)
	case o.nodes < 1:
		return fmt.Errorf("--nodes must be at least 1, not %d", o.nodes)
	case o.storage != "etcd" && o.storage != "memory":
		return fmt.Errorf("--storage must be etcd or memory, not %q", o.storage)
	case o.timeout <= 0:
		return fmt.Errorf("--timeout must be positive, not %s", o.timeout)
	case o.imageFrom == "" || o.imageTo == "":
		return errors.New("--image-from and --image-to must not be empty")
	case o.imageFrom == o.imageTo:
		return fmt.Errorf("--image-from and --image-to are both %q: the rollout needs a new image", o.imageFrom)
	}
	return nil
}

// benchResult is what `kplane bench --json` prints. Durations are seconds.
type benchResult struct {
	Replicas int    `json:"replicas"`
	Nodes    int    `json:"nodes"`
	Storage  string `json:"storage"`
	// GOOS, GOARCH and CPUs describe the machine.
	GOOS   string `json:"goos"`
	GOARCH string `json:"goarch"`
	CPUs   int    `json:"cpus"`
	// StartupSeconds is from starting the child to its serving, with
	// every simulated node registered and Ready.
	StartupSeconds float64         `json:"startup_seconds"`
	Create         benchPhaseStats `json:"create"`
	Rollout        benchPhaseStats `json:"rollout"`
	Delete         benchPhaseStats `json:"delete"`
	// Process is the child's figures read just before it is stopped;
	// null where /proc is not available.
	Process *procStats `json:"process"`
}

// benchPhaseStats are the figures of one phase.
type benchPhaseStats struct {
	// Seconds is the time until the phase's last milestone.
	Seconds float64 `json:"seconds"`
	// Milestones are the seconds, from the phase's start, at which each
	// milestone was first seen: create: first_pod_created, pods_created,
	// pods_scheduled, pods_ready, available; rollout:
	// new_replicaset_created, first_new_pod_created, new_pods_available,
	// old_replicasets_scaled_down, complete; delete: deployment_gone,
	// replicasets_gone, complete.
	Milestones map[string]float64 `json:"milestones"`
	Requests   benchRequests      `json:"requests"`
	// Etcd is null with --storage=memory.
	Etcd *benchEtcd `json:"etcd"`
	// CPUSeconds is the child's CPU time in the phase; null without /proc.
	CPUSeconds *float64 `json:"cpu_seconds"`
	// order keeps the milestones' order and labels for the table.
	order []benchMilestone
}

// procStats are a process's figures from /proc.
type procStats struct {
	// PeakRSSBytes is VmHWM, the peak resident set size.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// RSSBytes is VmRSS, the resident set size when read.
	RSSBytes int64 `json:"rss_bytes"`
	// CPUSeconds is utime+stime.
	CPUSeconds float64 `json:"cpu_seconds"`
}

// benchChild is the running `kplane up`.
type benchChild struct {
	cmd *exec.Cmd
	// exited is closed when the child has exited; err is then its Wait error.
	exited chan struct{}
	err    error
	// logPath holds the child's stdout and stderr.
	logPath string
	// stopped is set once stop ran.
	stopped bool
}

func (o *benchOptions) run(ctx context.Context, stdout, stderr io.Writer) (err error) {
	if err := o.validate(); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the kplane binary: %w", err)
	}
	dir, err := os.MkdirTemp("", "kplane-bench-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	started := time.Now()
	child, err := o.startChild(exe, dir)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := child.stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
	}()
	c, err := o.waitServing(ctx, child, filepath.Join(dir, "data", "kubeconfig"))
	if err != nil {
		return o.failure(ctx, child, "startup", err, "")
	}
	defer c.CloseIdleConnections()
	res := &benchResult{
		Replicas: o.replicas, Nodes: o.nodes, Storage: o.storage,
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPUs: runtime.NumCPU(),
		StartupSeconds: time.Since(started).Seconds(),
	}
	if err := o.drive(ctx, c, child, res); err != nil {
		return err
	}
	if ps, err := readProcStats(child.cmd.Process.Pid); err == nil {
		res.Process = ps
	}
	// Stop the child before printing, so that its profiles are written
	// and a shutdown failure is reported with the results.
	stopErr := child.stop()
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		printBench(stdout, res)
	}
	if stopErr != nil {
		fmt.Fprintln(stderr, "kplane up log:\n"+child.logTail())
	}
	return stopErr
}

// drive runs the three phases against the serving child.
func (o *benchOptions) drive(ctx context.Context, c *client.Client, child *benchChild, res *benchResult) error {
	nsc := client.NewResource(c, client.Namespaces)
	if _, err := nsc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", benchNamespace, err)
	}
	pods := client.NewResource(c, client.Pods).Namespace(benchNamespace)
	rss := client.NewResource(c, client.ReplicaSets).Namespace(benchNamespace)
	deps := client.NewResource(c, client.Deployments).Namespace(benchNamespace)

	// Each watch starts at the revision of a list of the empty
	// namespace, so that no event after it is missed however long the
	// watch takes to be registered.
	wctx, stopWatches := context.WithCancel(ctx)
	defer stopWatches()
	podW, err := benchWatch(wctx, pods, o.timeout)
	if err != nil {
		return err
	}
	defer podW.Stop()
	rsW, err := benchWatch(wctx, rss, o.timeout)
	if err != nil {
		return err
	}
	defer rsW.Stop()
	depW, err := benchWatch(wctx, deps, o.timeout)
	if err != nil {
		return err
	}
	defer depW.Stop()
	tr := newBenchTracker(o.replicas)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr.Run(wctx, podW, rsW, depW)
	}()
	defer func() {
		stopWatches()
		<-done
	}()

	const name = "bench"
	replicas := int32(o.replicas)
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: o.imageFrom}}},
			},
		},
	}
	phases := []struct {
		name       string
		image      string
		milestones []benchMilestone
		out        *benchPhaseStats
		act        func(ctx context.Context) error
	}{
		{"create", o.imageFrom, benchCreateMilestones, &res.Create, func(ctx context.Context) error {
			_, err := deps.Create(ctx, d, metav1.CreateOptions{})
			return err
		}},
		{"rollout", o.imageTo, benchRolloutMilestones, &res.Rollout, func(ctx context.Context) error {
			patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"containers": []map[string]string{{"name": "app", "image": o.imageTo}},
			}}}})
			if err != nil {
				return err
			}
			_, err = deps.Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			return err
		}},
		{"delete", o.imageTo, benchDeleteMilestones, &res.Delete, func(ctx context.Context) error {
			bg := metav1.DeletePropagationBackground
			return deps.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg})
		}},
	}
	for _, ph := range phases {
		before, err := scrapeBenchCounters(ctx, c)
		if err != nil {
			return o.failure(ctx, child, ph.name, err, "")
		}
		cpuBefore, cpuErr := readProcStats(child.cmd.Process.Pid)
		p := tr.begin(ph.name, ph.image, ph.milestones)
		if err := ph.act(ctx); err != nil {
			return o.failure(ctx, child, ph.name, err, tr.progress(p))
		}
		if err := tr.wait(ctx, p, child.exited); err != nil {
			return o.failure(ctx, child, ph.name, err, tr.progress(p))
		}
		after, err := scrapeBenchCounters(ctx, c)
		if err != nil {
			return o.failure(ctx, child, ph.name, err, "")
		}
		out := ph.out
		out.order = ph.milestones
		out.Milestones = map[string]float64{}
		for k, v := range p.reached {
			out.Milestones[k] = v.Seconds()
			out.Seconds = max(out.Seconds, v.Seconds())
		}
		out.Requests = deltaRequests(before, after)
		out.Etcd = deltaEtcd(before, after)
		if cpuAfter, err := readProcStats(child.cmd.Process.Pid); err == nil && cpuErr == nil {
			cpu := cpuAfter.CPUSeconds - cpuBefore.CPUSeconds
			out.CPUSeconds = &cpu
		}
	}
	return nil
}

// benchWatch lists the (empty) collection and watches it from there, for
// longer than the run may last (the server's default ends a watch after
// 30 to 60 minutes).
func benchWatch[T cache.Object](ctx context.Context, rc *client.ResourceClient[T], timeout time.Duration) (cache.Watch[T], error) {
	list, err := rc.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", rc.Resource().Resource, err)
	}
	secs := int64(timeout/time.Second) + 60
	w, err := rc.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true, TimeoutSeconds: &secs})
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", rc.Resource().Resource, err)
	}
	return w, nil
}

// failure is the error of a phase that did not finish: a timeout names
// the counts reached, an exited child shows the end of its log.
func (o *benchOptions) failure(ctx context.Context, child *benchChild, phase string, err error, progress string) error {
	where := "in phase " + phase
	if progress != "" {
		where += " (" + progress + ")"
	}
	// On an interrupt (SIGINT from a terminal reaches the child too) the
	// child's exit is expected.
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("interrupted %s", where)
	}
	select {
	case <-child.exited:
		return fmt.Errorf("kplane up exited %s: %v\nkplane up log:\n%s", where, child.err, child.logTail())
	default:
	}
	if ctx.Err() != nil {
		return fmt.Errorf("timed out after %s %s", o.timeout, where)
	}
	return fmt.Errorf("%s: %w", where, err)
}

// startChild starts `kplane up` on a free port with its data in dir/data
// and its output in dir/up.log.
func (o *benchOptions) startChild(exe, dir string) (*benchChild, error) {
	logPath := filepath.Join(dir, "up.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := []string{"up",
		"--data-dir", filepath.Join(dir, "data"),
		// Port 0 has the child pick a free port itself (no race with
		// another process); the kubeconfig it writes names it.
		"--port", "0",
		"--health-address", "127.0.0.1:0",
		"--nodes", strconv.Itoa(o.nodes),
		"--storage", o.storage,
		"--log-level", "warn",
	}
	for flag, path := range map[string]string{"--cpuprofile": o.cpuProfile, "--memprofile": o.memProfile} {
		if path == "" {
			continue
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			_ = logFile.Close()
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		args = append(args, flag, abs)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = benchChildAttr()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start kplane up: %w", err)
	}
	ch := &benchChild{cmd: cmd, exited: make(chan struct{}), logPath: logPath}
	go func() {
		ch.err = cmd.Wait()
		_ = logFile.Close()
		close(ch.exited)
	}()
	return ch, nil
}

// stop sends the child SIGTERM and waits for it to exit, killing it after
// benchStopWait. It returns an error when the child did not exit cleanly;
// later calls return nil.
func (ch *benchChild) stop() error {
	if ch.stopped {
		return nil
	}
	ch.stopped = true
	select {
	case <-ch.exited:
		return nil // it died before: the phase's error says so
	default:
	}
	_ = ch.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(benchStopWait)
	defer timer.Stop()
	select {
	case <-ch.exited:
		if ch.err != nil {
			return fmt.Errorf("kplane up did not stop cleanly on SIGTERM: %w", ch.err)
		}
		return nil
	case <-timer.C:
		_ = ch.cmd.Process.Kill()
		<-ch.exited
		return fmt.Errorf("kplane up did not stop within %s of SIGTERM and was killed", benchStopWait)
	}
}

// logTail is the end of the child's output.
func (ch *benchChild) logTail() string {
	data, err := os.ReadFile(ch.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// waitServing waits until the child wrote its kubeconfig, answers
// /readyz with the admin's client certificate and has every simulated
// node registered and Ready, and returns the admin's client.
func (o *benchOptions) waitServing(ctx context.Context, child *benchChild, kubeconfigPath string) (*client.Client, error) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var c *client.Client
	last := errors.New("no kubeconfig written yet")
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-child.exited:
			return nil, errors.New("kplane up exited")
		case <-tick.C:
		}
		if c == nil {
			if _, err := os.Stat(kubeconfigPath); err != nil {
				continue
			}
			kc, err := client.LoadKubeconfig(client.KubeconfigOptions{Path: kubeconfigPath})
			if err != nil {
				return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfigPath, err)
			}
			kc.Config.UserAgent = "kplane-bench"
			if c, err = client.New(kc.Config); err != nil {
				return nil, err
			}
		}
		capacity, err := o.ready(ctx, c)
		if last = err; err != nil {
			continue
		}
		// The rollout surges by 25% (rounded up) over the replicas.
		if peak := int64(o.replicas) + int64((o.replicas+3)/4); peak > capacity {
			return nil, fmt.Errorf("%d replicas (%d pods during the rollout) do not fit on %d nodes with room for %d pods: add --nodes", o.replicas, peak, o.nodes, capacity)
		}
		return c, nil
	}
}

// ready checks /readyz and the simulated nodes once, and returns how
// many pods the Ready nodes have room for.
func (o *benchOptions) ready(ctx context.Context, c *client.Client) (int64, error) {
	if _, err := c.Do(ctx, client.Request{Path: "/readyz"}); err != nil {
		return 0, fmt.Errorf("/readyz: %w", err)
	}
	nodes, err := client.NewResource(c, client.Nodes).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("list nodes: %w", err)
	}
	ready, pods := 0, int64(0)
	for _, n := range nodes.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready++
				pods += n.Status.Allocatable.Pods().Value()
			}
		}
	}
	if ready < o.nodes {
		return 0, fmt.Errorf("%d/%d nodes ready", ready, o.nodes)
	}
	return pods, nil
}
