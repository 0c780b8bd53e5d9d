package etcd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		c.Close()
		b.Close()
	})
	return hs.URL
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
