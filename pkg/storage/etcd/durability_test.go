package etcd

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/storage"
)

// durabilityDirEnv, when set, makes the test binary run durabilityChild
// instead of the tests: see TestMain.
const durabilityDirEnv = "KPLANE_ETCD_DURABILITY_DIR"

const durabilityWriters = 4

// durabilityChild runs an embedded etcd (with fsync) in dir and writes
// until killed: each writer creates its key, then updates it over and
// over, printing "ack <key> <rv> <value>" after each acknowledged write.
func durabilityChild(dir string) error {
	ctx := context.Background()
	e, err := StartEmbedded(ctx, EmbeddedConfig{DataDir: dir})
	if err != nil {
		return err
	}
	b, err := New(Config{Client: e.Client()})
	if err != nil {
		return err
	}
	s, err := b.Storage(cmConfig)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	ack := func(key, rv, value string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, "ack %s %s %s\n", key, rv, value)
	}
	errs := make(chan error, durabilityWriters)
	for w := range durabilityWriters {
		go func() {
			name := fmt.Sprintf("w%d", w)
			key := "/configmaps/ns/" + name
			out := &corev1.ConfigMap{}
			if err := s.Create(ctx, key, newTestCM(name), out); err != nil {
				errs <- err
				return
			}
			ack(key, out.ResourceVersion, out.Data["v"])
			for n := 1; ; n++ {
				value := fmt.Sprintf("%s-%d", name, n)
				err := s.GuaranteedUpdate(ctx, key, out, false, nil, func(cur runtime.Object) (runtime.Object, error) {
					cm := cur.(*corev1.ConfigMap)
					cm.Data = map[string]string{"v": value}
					return cm, nil
				})
				if err != nil {
					errs <- err
					return
				}
				ack(key, out.ResourceVersion, value)
			}
		}()
	}
	return <-errs
}

type ackedWrite struct {
	key, value string
	rv         int64
}

// TestDurabilityAfterSIGKILL writes from concurrent writers in a child
// process with embedded etcd, kills it with SIGKILL mid-stream, restarts
// etcd on the same data dir, and checks that every acknowledged write is
// there at its resourceVersion and nothing else is.
func TestDurabilityAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("durability test skipped under -short")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), durabilityDirEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	const wantAcks = 400
	acks := make(chan ackedWrite)
	scanDone := make(chan error, 1)
	go func() {
		defer close(acks)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 4 || f[0] != "ack" {
				continue
			}
			rv, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				scanDone <- fmt.Errorf("bad ack line %q", sc.Text())
				return
			}
			acks <- ackedWrite{key: f[1], rv: rv, value: f[3]}
		}
		scanDone <- sc.Err()
	}()
	var acked []ackedWrite
	guard := time.After(60 * time.Second)
	for len(acked) < wantAcks {
		select {
		case a, ok := <-acks:
			if !ok {
				t.Fatalf("child stopped after %d acks", len(acked))
			}
			acked = append(acked, a)
		case <-guard:
			cmd.Process.Kill()
			t.Fatalf("only %d acks within 60s", len(acked))
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Acks printed before the kill count too.
	for a := range acks {
		acked = append(acked, a)
	}
	if err := <-scanDone; err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	t.Logf("%d writes acknowledged before SIGKILL", len(acked))

	e, err := StartEmbedded(context.Background(), EmbeddedConfig{DataDir: dir})
	if err != nil {
		t.Fatalf("restart on the killed member's data: %v", err)
	}
	defer e.Close()
	b, err := New(Config{Client: e.Client()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	last := map[string]ackedWrite{}
	for _, a := range acked {
		// Every acknowledged write is in the history at its revision.
		resp, err := b.Client().Get(ctx, b.Prefix()+a.key, clientv3.WithRev(a.rv))
		if err != nil {
			t.Fatalf("read %s at %d: %v", a.key, a.rv, err)
		}
		if len(resp.Kvs) != 1 || resp.Kvs[0].ModRevision != a.rv {
			t.Fatalf("acknowledged write %s@%d is missing after restart", a.key, a.rv)
		}
		cm := &corev1.ConfigMap{}
		if err := (storage.JSONCodec{}).Decode(resp.Kvs[0].Value, cm); err != nil || cm.Data["v"] != a.value {
			t.Fatalf("acknowledged write %s@%d reads back as %v (%v), want %q", a.key, a.rv, cm.Data, err, a.value)
		}
		if a.rv > last[a.key].rv {
			last[a.key] = a
		}
	}
	// The current state is the last acknowledged write of each key, or at
	// most the one write that was in flight when the process died.
	s, err := b.Storage(cmConfig)
	if err != nil {
		t.Fatal(err)
	}
	l := &corev1.ConfigMapList{}
	if err := s.GetList(ctx, "/configmaps", storage.ListOptions{Recursive: true}, l); err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != durabilityWriters {
		t.Fatalf("%d objects after restart, want %d", len(l.Items), durabilityWriters)
	}
	for _, cm := range l.Items {
		key := "/configmaps/ns/" + cm.Name
		a := last[key]
		rv, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
		switch {
		case rv == a.rv && cm.Data["v"] == a.value:
		case rv > a.rv && cm.Data["v"] == nextValue(a.value):
		default:
			t.Errorf("%s is %q@%d after restart; last acknowledged %q@%d", key, cm.Data["v"], rv, a.value, a.rv)
		}
	}
}

// nextValue is the value a writer writes after v.
func nextValue(v string) string {
	name, n, ok := strings.Cut(v, "-")
	if !ok {
		return v + "-1"
	}
	i, _ := strconv.Atoi(n)
	return fmt.Sprintf("%s-%d", name, i+1)
}
