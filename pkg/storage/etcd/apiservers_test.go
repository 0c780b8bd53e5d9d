package etcd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/storage/cacher"
)

// apiServerOn starts an API server, with its own etcd client and watch
// cache, on the cluster at urls under prefix, and returns its URL.
func apiServerOn(t *testing.T, urls []string, prefix string) string {
	t.Helper()
	b, err := New(Config{Endpoints: urls, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	c, err := cacher.New(cacher.Config{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config{Backend: c})
	if err != nil {
		t.Fatalf("apiserver.New: %v", err)
	}
	hs := httptest.NewServer(srv.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	var ctrl sync.WaitGroup
	ctrl.Go(func() { _ = srv.RunControllers(ctx) })
	t.Cleanup(func() {
		cancel()
		ctrl.Wait()
		hs.CloseClientConnections()
		hs.Close()
		c.Close()
		b.Close()
	})
	return hs.URL
}

// testCRDAcrossAPIServers creates a CRD through one API server and uses
// its custom resources through another on the same cluster.
func testCRDAcrossAPIServers(t *testing.T, urls []string) {
	a, b := apiServerOn(t, urls, "/crd-apiservers"), apiServerOn(t, urls, "/crd-apiservers")
	send := func(method, url, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"things.example.com"},
"spec":{"group":"example.com","scope":"Cluster","names":{"plural":"things","kind":"Thing"},
"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	if code, body := send("POST", a+"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd); code != http.StatusCreated {
		t.Fatalf("create CRD through the first server: %d %s", code, body)
	}
	// The second server serves it once its own watch of CRDs brings it.
	thing := `{"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"t1"},"spec":{"n":1}}`
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := send("POST", b+"/apis/example.com/v1/things", thing)
		if code == http.StatusCreated {
			break
		}
		if code != http.StatusNotFound || time.Now().After(deadline) {
			t.Fatalf("create through the second server: %d %s", code, body)
		}
		time.Sleep(10 * time.Millisecond) // polling a remote server, not synchronising goroutines
	}
	if code, body := send("GET", a+"/apis/example.com/v1/things/t1", ""); code != http.StatusOK || !strings.Contains(body, `"n":1`) {
		t.Fatalf("read through the first server: %d %s", code, body)
	}
}

type wireObject struct {
	Metadata struct {
		Name            string `json:"name"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}

type wireEvent struct {
	Type   string     `json:"type"`
	Object wireObject `json:"object"`
}

// testTwoAPIServers writes ConfigMaps through one API server and watches
// them through another, both on the cluster, across a stop of the leader.
func testTwoAPIServers(t *testing.T, members []*Embedded) {
	urls := clientURLs(members)
	a, b := apiServerOn(t, urls, "/two-apiservers"), apiServerOn(t, urls, "/two-apiservers")
	const path = "/api/v1/namespaces/default/configmaps"

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b+path+"?watch=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch through the second server: %s", resp.Status)
	}
	events := make(chan wireEvent)
	go func() {
		defer close(events)
		dec := json.NewDecoder(resp.Body)
		for {
			var ev wireEvent
			if err := dec.Decode(&ev); err != nil {
				return
			}
			select {
			case events <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()

	// create posts a ConfigMap through the first server, retrying while
	// the cluster elects a leader, and returns its resourceVersion.
	create := func(name string) string {
		t.Helper()
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q},"data":{"v":%q}}`, name, name)
		var last string
		for range 50 {
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
			req, err := http.NewRequestWithContext(rctx, http.MethodPost, a+path, bytes.NewBufferString(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				rcancel()
				last = err.Error()
				continue
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			rcancel()
			if resp.StatusCode == http.StatusCreated {
				var obj wireObject
				if err := json.Unmarshal(data, &obj); err != nil {
					t.Fatal(err)
				}
				return obj.Metadata.ResourceVersion
			}
			if resp.StatusCode == http.StatusConflict {
				t.Fatalf("create %s: %s", name, data)
			}
			last = fmt.Sprintf("%s: %s", resp.Status, data)
		}
		t.Fatalf("create %s: %s", name, last)
		return ""
	}
	type acked struct{ name, rv string }
	var written []acked
	for i := range 5 {
		name := fmt.Sprintf("before-%d", i)
		written = append(written, acked{name, create(name)})
	}
	leader := -1
	for i, m := range members {
		if m != nil && m.etcd.Server.Leader() == m.etcd.Server.MemberID() {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no member is the leader")
	}
	t.Logf("stopping leader m%d", leader)
	if err := members[leader].Close(); err != nil {
		t.Fatal(err)
	}
	members[leader] = nil
	for i := range 5 {
		name := fmt.Sprintf("after-%d", i)
		written = append(written, acked{name, create(name)})
	}
	for _, w := range written {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("watch through the second server ended before %s", w.name)
			}
			if ev.Type != "ADDED" || ev.Object.Metadata.Name != w.name || ev.Object.Metadata.ResourceVersion != w.rv {
				t.Fatalf("watch event %s %s@%s, want ADDED %s@%s", ev.Type, ev.Object.Metadata.Name, ev.Object.Metadata.ResourceVersion, w.name, w.rv)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no watch event for %s within 30s", w.name)
		}
	}
}

// apiServerChildEnv, when set, makes the test binary run apiServerChild
// instead of the tests: see TestMain.
const apiServerChildEnv = "KPLANE_ETCD_APISERVER_CHILD_DIR"

// apiServerChild serves an API server over the watch cache and an
// embedded etcd (fsync on) with its data in dir, as `kplane apiserver
// --storage=etcd` does, printing "url <URL>" once it serves. It runs until
// killed.
func apiServerChild(dir string) error {
	e, err := StartEmbedded(context.Background(), EmbeddedConfig{DataDir: dir})
	if err != nil {
		return err
	}
	b, err := New(Config{Client: e.Client()})
	if err != nil {
		return err
	}
	c, err := cacher.New(cacher.Config{Backend: b})
	if err != nil {
		return err
	}
	srv, err := apiserver.New(apiserver.Config{Backend: c})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("url http://%s\n", ln.Addr())
	return http.Serve(ln, srv.Handler())
}

// startAPIServerChild runs apiServerChild in a child process on dir and
// returns it with its URL.
func startAPIServerChild(t *testing.T, dir string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), apiServerChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "url "); ok {
				line <- u
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case u := <-line:
		return cmd, u
	case <-time.After(60 * time.Second):
		t.Fatal("API server child did not start within 60s")
	}
	return nil, ""
}

// TestAPIServerDurabilityAfterSIGKILL runs an API server on embedded etcd
// in a child process, writes to it over HTTP from concurrent clients, kills
// it with SIGKILL mid-stream, restarts it on the same data dir, and checks
// that every write it acknowledged is there with its resourceVersion, and
// that nothing half-written is visible.
func TestAPIServerDurabilityAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("durability test skipped under -short")
	}
	dir := t.TempDir()
	cmd, url := startAPIServerChild(t, dir)
	const path = "/api/v1/namespaces/default/configmaps"
	client := &http.Client{Timeout: 10 * time.Second}
	do := func(method, u, contentType, body string) (int, wireObjectData, error) {
		req, err := http.NewRequest(method, u, strings.NewReader(body))
		if err != nil {
			return 0, wireObjectData{}, err
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, wireObjectData{}, err
		}
		defer resp.Body.Close()
		var obj wireObjectData
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return resp.StatusCode, obj, err
		}
		if resp.StatusCode < 300 {
			if err := json.Unmarshal(data, &obj); err != nil {
				return resp.StatusCode, obj, err
			}
		}
		return resp.StatusCode, obj, nil
	}

	// Each object gets two writes: a create (v=created) and a patch
	// (v=patched). acks records every acknowledged one.
	type ack struct {
		name, value, rv string
	}
	var mu sync.Mutex
	var acks []ack
	record := func(a ack) int {
		mu.Lock()
		defer mu.Unlock()
		acks = append(acks, a)
		return len(acks)
	}
	const writers, wantAcks = 4, 300
	enough := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for n := 0; ; n++ {
				name := fmt.Sprintf("w%d-%d", w, n)
				body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q},"data":{"v":"created"}}`, name)
				code, obj, err := do(http.MethodPost, url+path, "application/json", body)
				if err != nil || code != http.StatusCreated {
					return // the server is gone
				}
				record(ack{name, "created", obj.Metadata.ResourceVersion})
				code, obj, err = do(http.MethodPatch, url+path+"/"+name, "application/merge-patch+json", `{"data":{"v":"patched"}}`)
				if err != nil || code != http.StatusOK {
					return
				}
				if record(ack{name, "patched", obj.Metadata.ResourceVersion}) >= wantAcks {
					once.Do(func() { close(enough) })
				}
			}
		})
	}
	select {
	case <-enough:
	case <-time.After(60 * time.Second):
		t.Fatalf("only %d acknowledged writes within 60s", len(acks))
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wg.Wait() // every writer stops at its first failed request
	t.Logf("%d writes acknowledged before SIGKILL", len(acks))

	_, url = startAPIServerChild(t, dir)
	last := map[string]ack{}
	for _, a := range acks {
		last[a.name] = a // per object, the patch is acknowledged after the create
	}
	for name, a := range last {
		code, obj, err := do(http.MethodGet, url+path+"/"+name, "", "")
		if err != nil || code != http.StatusOK {
			t.Errorf("acknowledged %s (%s@%s) after restart: %d %v", name, a.value, a.rv, code, err)
			continue
		}
		got := obj.Data["v"]
		switch {
		case obj.Metadata.ResourceVersion == a.rv && got == a.value:
		case a.value == "created" && got == "patched" && rvNumber(t, obj.Metadata.ResourceVersion) > rvNumber(t, a.rv):
			// The patch was in flight at the kill and landed unacknowledged.
		default:
			t.Errorf("%s after restart is %q@%s, acknowledged %q@%s", name, got, obj.Metadata.ResourceVersion, a.value, a.rv)
		}
	}
	// Nothing else is visible but objects whose create was in flight, and
	// those whole.
	var list struct {
		Items []wireObjectData `json:"items"`
	}
	req, _ := http.NewRequest(http.MethodGet, url+path, nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	extra := 0
	for _, it := range list.Items {
		if _, ok := last[it.Metadata.Name]; ok {
			continue
		}
		extra++
		if v := it.Data["v"]; v != "created" && v != "patched" {
			t.Errorf("unacknowledged %s is half-written: %q", it.Metadata.Name, v)
		}
	}
	if extra > writers {
		t.Errorf("%d unacknowledged objects after restart, but only %d writes were in flight", extra, writers)
	}
}

type wireObjectData struct {
	Metadata struct {
		Name            string `json:"name"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Data map[string]string `json:"data"`
}

func rvNumber(t testing.TB, rv string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return n
}
