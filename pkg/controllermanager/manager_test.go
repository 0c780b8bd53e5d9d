package controllermanager

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/featuregate"
	"github.com/kplane/kplane/pkg/leaderelection"
	"github.com/kplane/kplane/pkg/storage/memory"
	"github.com/kplane/kplane/pkg/testenv"
)

// waitTimeout bounds waits on the server; it fails a test, never paces one.
const waitTimeout = 30 * time.Second

// requestLog records the requests a test server received.
type requestLog struct {
	mu   sync.Mutex
	reqs []string // method + " " + path + "?" + query
}

func (l *requestLog) add(r *http.Request) {
	l.mu.Lock()
	l.reqs = append(l.reqs, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
	l.mu.Unlock()
}

// matching returns the recorded requests for path (exactly) whose query
// contains every one of parts.
func (l *requestLog) matching(path string, parts ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.reqs {
		p, q, _ := strings.Cut(r, "?")
		if !strings.HasSuffix(p, " "+path) {
			continue
		}
		ok := true
		for _, part := range parts {
			if !strings.Contains(q, part) {
				ok = false
			}
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

// startServer serves a kplane API server on a memory store and returns a
// client for it and the log of its requests.
func startServer(t *testing.T) (*client.Client, *requestLog) {
	t.Helper()
	backend, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config{Backend: backend, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	log := &requestLog{}
	h := srv.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		h.ServeHTTP(w, r)
	}))
	transport := &http.Transport{}
	t.Cleanup(func() {
		transport.CloseIdleConnections()
		hs.CloseClientConnections()
		hs.Close()
		_ = backend.Close()
	})
	c, err := client.New(client.Config{Host: hs.URL, HTTPClient: &http.Client{Transport: transport}})
	if err != nil {
		t.Fatal(err)
	}
	return c, log
}

// fastElection keeps leader-election tests short on the real clock.
var fastElection = LeaderElectionConfig{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond}

// runManager runs m until the test ends and returns a channel closed when
// Run returned, and a function returning Run's result after that.
func runManager(t *testing.T, m *Manager) (cancel context.CancelFunc, done <-chan struct{}, result func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan struct{})
	var err error
	go func() {
		err = m.Run(ctx)
		close(ch)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-ch:
		case <-time.After(waitTimeout):
			t.Error("Run did not return after its context was cancelled")
		}
	})
	return cancel, ch, func() error { <-ch; return err }
}

func deploymentOf(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
}

func httpGet(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func TestNewValidates(t *testing.T) {
	c, _ := startServer(t)
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "no client", cfg: Config{}, wantErr: "Client is required"},
		{name: "negative workers", cfg: Config{Client: c, Workers: -1}, wantErr: "Workers"},
		{name: "negative nodes", cfg: Config{Client: c, Nodes: -1}, wantErr: "Nodes"},
		{name: "unknown controller", cfg: Config{Client: c, Controllers: []string{"nope"}}, wantErr: `unknown controller "nope"`},
		{name: "bad lease durations", cfg: Config{Client: c, LeaderElection: LeaderElectionConfig{LeaseDuration: time.Second, RenewDeadline: 2 * time.Second}}, wantErr: "LeaseDuration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// A leading manager rolls a Deployment out to running pods, serves health
// and metrics, and releases its lease on shutdown.
func TestRunLeadsAndRollsOut(t *testing.T) {
	c, _ := startServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	le := fastElection
	le.ReleaseOnCancel = true
	m, err := New(Config{
		Client: c, Controllers: []string{"*", NodeSimulator}, Nodes: 2, Workers: 2,
		LeaderElection: le, Identity: "cm-1", Logger: slog.New(slog.DiscardHandler), HealthListener: ln,
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := strings.Join(m.Controllers(), ","); diff != "deployment,replicaset,statefulset,garbagecollector,namespace,clusterrole-aggregation,podgc,disruption,resourcequota,replicationcontroller,endpointslice,endpoint,serviceaccount,daemonset,job,cronjob,ttl-after-finished,nodesim" {
		t.Fatalf("controllers %s", diff)
	}
	cancel, _, result := runManager(t, m)
	ctx, wcancel := context.WithTimeout(context.Background(), waitTimeout)
	defer wcancel()
	if _, err := client.NewResource(c, client.Deployments).Namespace("default").Create(ctx, deploymentOf("web", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.Wait(ctx, c, client.Deployments, "default/web", func(d *appsv1.Deployment) bool {
		return d.Status.ReadyReplicas == 3 && d.Status.UpdatedReplicas == 3 && d.Status.ObservedGeneration == d.Generation
	}); err != nil {
		t.Fatal(err)
	}
	lease, err := client.NewResource(c, client.Leases).Namespace(DefaultLeaseNamespace).Get(ctx, DefaultLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := deref(lease.Spec.HolderIdentity); got != "cm-1" {
		t.Fatalf("lease holder %q, want cm-1", got)
	}
	if !m.IsLeader() {
		t.Fatal("IsLeader false while leading")
	}
	// The ReplicaSet controller recorded its pod creations as Events, as
	// kube-controller-manager's does (the recorder writes asynchronously).
	for deadline := time.Now().Add(waitTimeout); ; {
		evs, err := client.NewResource(c, client.Events).Namespace("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, ev := range evs.Items {
			found = found || (ev.Reason == "SuccessfulCreate" && ev.Source.Component == "replicaset-controller" && ev.InvolvedObject.Kind == "ReplicaSet")
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no SuccessfulCreate event from replicaset-controller among %d events", len(evs.Items))
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Over the listener: /healthz passes, /metrics has the leader and
	// reconcile series.
	base := "http://" + ln.Addr().String()
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Fatalf("/healthz %d %q", resp.StatusCode, body)
	}
	code, metrics := httpGet(t, m.Handler(), "/metrics")
	if code != 200 {
		t.Fatalf("/metrics %d", code)
	}
	for _, want := range []string{
		`leader_election_master_status{name="kplane-controller-manager"} 1`,
		`controller_runtime_reconcile_total{controller="deployment",result="success"}`,
		`controller_runtime_reconcile_total{controller="replicaset-controller",result="success"}`,
		`controller_runtime_max_concurrent_reconciles{controller="deployment"} 2`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	http.DefaultClient.CloseIdleConnections()

	// The garbage collector removes the ReplicaSet and pods of a deleted
	// Deployment.
	if err := client.NewResource(c, client.Deployments).Namespace("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rsList, err := client.NewResource(c, client.ReplicaSets).Namespace("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range rsList.Items {
		if err := testenv.WaitDeleted(ctx, c, client.ReplicaSets, "default/"+rs.Name); err != nil {
			t.Fatal(err)
		}
	}
	for {
		pods, err := client.NewResource(c, client.Pods).Namespace("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) == 0 {
			break
		}
		if err := testenv.WaitDeleted(ctx, c, client.Pods, "default/"+pods.Items[0].Name); err != nil {
			t.Fatal(err)
		}
	}

	cancel()
	if err := result(); err != nil {
		t.Fatalf("Run = %v after cancel, want nil", err)
	}
	lease, err = client.NewResource(c, client.Leases).Namespace(DefaultLeaseNamespace).Get(ctx, DefaultLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := deref(lease.Spec.HolderIdentity); got != "" {
		t.Fatalf("lease holder %q after shutdown, want released", got)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("health listener still accepts connections after Run returned")
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Of two managers only the leader acts; when it steps down, the other
// takes over and acts.
func TestOnlyLeaderActs(t *testing.T) {
	c, _ := startServer(t)
	le := fastElection
	le.ReleaseOnCancel = true
	newManager := func(id string) *Manager {
		m, err := New(Config{Client: c, Controllers: []string{ReplicaSetController}, LeaderElection: le, Identity: id, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	first, second := newManager("first"), newManager("second")
	cancelFirst, _, firstResult := runManager(t, first)
	ctx, wcancel := context.WithTimeout(context.Background(), waitTimeout)
	defer wcancel()
	if _, err := testenv.Wait(ctx, c, client.Leases, DefaultLeaseNamespace+"/"+DefaultLeaseName, func(l *coordinationv1.Lease) bool {
		return deref(l.Spec.HolderIdentity) == "first"
	}); err != nil {
		t.Fatal(err)
	}
	runManager(t, second)

	// The second manager's controllers have not started: its informers
	// never listed, so it can not have been the one acting. The leader
	// is the only one whose replicaset controller writes status.
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "one", Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "one"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "one"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
	if _, err := client.NewResource(c, client.ReplicaSets).Namespace("default").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.Wait(ctx, c, client.ReplicaSets, "default/one", func(rs *appsv1.ReplicaSet) bool { return rs.Status.Replicas == 1 }); err != nil {
		t.Fatal(err)
	}
	if second.IsLeader() {
		t.Fatal("second manager leads while the first holds the lease")
	}

	cancelFirst()
	if err := firstResult(); err != nil {
		t.Fatalf("first Run = %v", err)
	}
	if _, err := testenv.Wait(ctx, c, client.Leases, DefaultLeaseNamespace+"/"+DefaultLeaseName, func(l *coordinationv1.Lease) bool {
		return deref(l.Spec.HolderIdentity) == "second"
	}); err != nil {
		t.Fatal(err)
	}
	// The new leader's controller acts: scale up and see a second pod.
	if _, err := client.NewResource(c, client.ReplicaSets).Namespace("default").Patch(ctx, "one", "application/merge-patch+json", []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.Wait(ctx, c, client.ReplicaSets, "default/one", func(rs *appsv1.ReplicaSet) bool { return rs.Status.Replicas == 2 }); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// When another holder takes the lease, the manager stops its controllers
// and Run returns ErrLeadershipLost.
func TestLeadershipLossStopsRun(t *testing.T) {
	c, _ := startServer(t)
	m, err := New(Config{Client: c, Controllers: []string{ReplicaSetController}, LeaderElection: fastElection, Identity: "me", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	_, done, result := runManager(t, m)
	ctx, wcancel := context.WithTimeout(context.Background(), waitTimeout)
	defer wcancel()
	leases := client.NewResource(c, client.Leases).Namespace(DefaultLeaseNamespace)
	lease, err := testenv.Wait(ctx, c, client.Leases, DefaultLeaseNamespace+"/"+DefaultLeaseName, func(l *coordinationv1.Lease) bool {
		return deref(l.Spec.HolderIdentity) == "me"
	})
	if err != nil {
		t.Fatal(err)
	}
	for {
		lease.Spec.HolderIdentity = ptr("thief")
		now := metav1.NewMicroTime(time.Now())
		lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
		if _, err = leases.Update(ctx, lease, metav1.UpdateOptions{}); err == nil {
			break
		}
		// The manager renewed in between: read and try again.
		if lease, err = leases.Get(ctx, DefaultLeaseName, metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-done:
		if err := result(); !errors.Is(err, leaderelection.ErrLeadershipLost) {
			t.Fatalf("Run = %v, want ErrLeadershipLost", err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not return after the lease was taken")
	}
	if m.IsLeader() {
		t.Fatal("IsLeader after losing the lease")
	}
}

// WatchListClient decides how the informers get their initial state: one
// streaming watch when on, a List then a Watch when off.
func TestWatchListClientGate(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			c, log := startServer(t)
			reg, err := featuregate.New(featuregate.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if err := reg.AddVersioned(Features()); err != nil {
				t.Fatal(err)
			}
			if !reg.Enabled(WatchListClient) {
				t.Fatal("WatchListClient is not on by default")
			}
			if err := reg.SetFromMap(map[string]bool{string(WatchListClient): on}); err != nil {
				t.Fatal(err)
			}
			m, err := New(Config{Client: c, Gates: reg.Freeze(), Controllers: []string{ReplicaSetController},
				LeaderElection: LeaderElectionConfig{Disabled: true}, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			runManager(t, m)
			// The controller acting proves its caches synced.
			ctx, wcancel := context.WithTimeout(context.Background(), waitTimeout)
			defer wcancel()
			rs := &appsv1.ReplicaSet{
				ObjectMeta: metav1.ObjectMeta{Name: "gate", Namespace: "default"},
				Spec: appsv1.ReplicaSetSpec{
					Replicas: ptr(int32(1)),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "gate"}},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "gate"}},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
					},
				},
			}
			if _, err := client.NewResource(c, client.ReplicaSets).Namespace("default").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := testenv.Wait(ctx, c, client.ReplicaSets, "default/gate", func(rs *appsv1.ReplicaSet) bool { return rs.Status.Replicas == 1 }); err != nil {
				t.Fatal(err)
			}
			const path = "/apis/apps/v1/replicasets"
			streams := log.matching(path, "watch=true", "sendInitialEvents=true")
			var lists []string
			for _, r := range log.matching(path) {
				if !strings.Contains(r, "watch=") {
					lists = append(lists, r)
				}
			}
			if on && (len(streams) == 0 || len(lists) != 0) {
				t.Fatalf("gate on: want a watch-list and no list; streams %q, lists %q", streams, lists)
			}
			if !on && (len(streams) != 0 || len(lists) == 0) {
				t.Fatalf("gate off: want a list and no watch-list; streams %q, lists %q", streams, lists)
			}
		})
	}
}

// runnerFunc adapts a function to runner.
type runnerFunc func(ctx context.Context, workers int) error

func (f runnerFunc) Run(ctx context.Context, workers int) error { return f(ctx, workers) }

// A controller that stops by itself stops the manager: Run returns its
// error after the other controllers have stopped, leading or not.
func TestControllerFailureStopsRun(t *testing.T) {
	for _, elect := range []bool{false, true} {
		t.Run(map[bool]string{false: "no election", true: "leading"}[elect], func(t *testing.T) {
			c, _ := startServer(t)
			m, err := New(Config{Client: c, Controllers: []string{ReplicaSetController}, Identity: "me",
				LeaderElection: LeaderElectionConfig{Disabled: !elect, LeaseDuration: fastElection.LeaseDuration,
					RenewDeadline: fastElection.RenewDeadline, RetryPeriod: fastElection.RetryPeriod},
				Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			stopped := make(chan struct{})
			m.controllers = append(m.controllers,
				namedRunner{name: "waiter", r: runnerFunc(func(ctx context.Context, _ int) error {
					<-ctx.Done()
					close(stopped)
					return nil
				})},
				namedRunner{name: "broken", r: runnerFunc(func(context.Context, int) error { return errors.New("boom") })})
			_, done, result := runManager(t, m)
			select {
			case <-done:
			case <-time.After(waitTimeout):
				t.Fatal("Run did not return after a controller failed")
			}
			err = result()
			if err == nil || !strings.Contains(err.Error(), "controller broken: boom") {
				t.Fatalf("Run = %v, want the broken controller's error", err)
			}
			select {
			case <-stopped:
			default:
				t.Fatal("Run returned before the other controller stopped")
			}
		})
	}
}

// The manager hands its gates to the controllers: with
// DeploymentReplicaSetTerminatingReplicas a ReplicaSet counts its
// terminating pods, without it the count stays unset.
func TestGatesReachControllers(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			c, _ := startServer(t)
			reg, err := featuregate.New(featuregate.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if err := reg.AddVersioned(Features()); err != nil {
				t.Fatal(err)
			}
			if err := reg.SetFromMap(map[string]bool{"DeploymentReplicaSetTerminatingReplicas": on}); err != nil {
				t.Fatal(err)
			}
			m, err := New(Config{Client: c, Gates: reg.Freeze(), Controllers: []string{ReplicaSetController},
				LeaderElection: LeaderElectionConfig{Disabled: true}, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			runManager(t, m)
			ctx, wcancel := context.WithTimeout(context.Background(), waitTimeout)
			defer wcancel()
			rs := &appsv1.ReplicaSet{
				ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "default"},
				Spec: appsv1.ReplicaSetSpec{
					Replicas: ptr(int32(1)),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "t"}},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "t"}},
						// Bound to a node no agent runs, so a deleted pod
						// stays terminating.
						Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
					},
				},
			}
			if _, err := client.NewResource(c, client.ReplicaSets).Namespace("default").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := testenv.Wait(ctx, c, client.ReplicaSets, "default/t", func(rs *appsv1.ReplicaSet) bool { return rs.Status.Replicas == 1 }); err != nil {
				t.Fatal(err)
			}
			pods, err := client.NewResource(c, client.Pods).Namespace("default").List(ctx, metav1.ListOptions{})
			if err != nil || len(pods.Items) != 1 {
				t.Fatalf("pods %v, err %v", pods, err)
			}
			// The controller replaces the terminating pod.
			if err := client.NewResource(c, client.Pods).Namespace("default").Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			_, err = testenv.Wait(ctx, c, client.ReplicaSets, "default/t", func(rs *appsv1.ReplicaSet) bool {
				return rs.Status.Replicas == 1 && rs.Status.ObservedGeneration == rs.Generation &&
					(!on || (rs.Status.TerminatingReplicas != nil && *rs.Status.TerminatingReplicas == 1))
			})
			if err != nil {
				t.Fatal(err)
			}
			if !on {
				if _, err := testenv.Wait(ctx, c, client.Pods, "default/"+pods.Items[0].Name, func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil }); err != nil {
					t.Fatal(err)
				}
				// Wait for the replacement: the controller saw the pod
				// terminating and wrote a status in the same sync.
				w, err := client.NewResource(c, client.Pods).Namespace("default").Watch(ctx, metav1.ListOptions{ResourceVersion: pods.ListMeta.ResourceVersion})
				if err != nil {
					t.Fatal(err)
				}
				replaced := false
				for ev := range w.ResultChan() {
					if ev.Object != nil && ev.Object.Name != pods.Items[0].Name {
						replaced = true
						break
					}
				}
				w.Stop()
				if !replaced {
					t.Fatal("the terminating pod was not replaced")
				}
				if _, err := testenv.Wait(ctx, c, client.ReplicaSets, "default/t", func(rs *appsv1.ReplicaSet) bool {
					return rs.Status.Replicas == 1 && rs.Status.ObservedGeneration == rs.Generation
				}); err != nil {
					t.Fatal(err)
				}
				got, err := client.NewResource(c, client.ReplicaSets).Namespace("default").Get(ctx, "t", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got.Status.TerminatingReplicas != nil {
					t.Fatalf("terminatingReplicas %d with the gate off, want unset", *got.Status.TerminatingReplicas)
				}
			}
		})
	}
}
