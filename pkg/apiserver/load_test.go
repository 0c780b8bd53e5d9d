package apiserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/storage/memory"
)

// TestLoadAnswers429AndStoresAcknowledgedWritesOnce runs 1,000 concurrent
// clients (200 with -short), each on its own connection, sending creates
// with generateName over loopback at a server whose mutating limit is
// small. The server must answer every request with 201 or 429 (never fail
// otherwise), its heap must come back to a bounded size once the clients
// are gone, and the objects stored must be exactly those it acknowledged:
// a 429 stores nothing, a 201 stores one object.
func TestLoadAnswers429AndStoresAcknowledgedWritesOnce(t *testing.T) {
	clients, perClient := 1000, 3
	if testing.Short() {
		clients = 200
	}
	// Each client holds a connection, both ends of it in this process.
	if limit := openFileLimit(); limit != 0 && limit < uint64(2*clients+256) {
		clients = max((int(limit)-256)/2, 50)
		t.Logf("open file limit %d: %d clients", limit, clients)
	}
	backend, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	s, err := New(Config{Backend: backend, MaxMutatingRequestsInFlight: 2, MaxRequestsInFlight: 4, Admission: noServiceAccounts})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	heapBefore := liveHeap()
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}

	var (
		mu    sync.Mutex
		acked = map[string]int{}
		codes = map[int]int{}
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	body, _ := json.Marshal(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "load-", Labels: map[string]string{"load": "yes"}}})
	for range clients {
		wg.Go(func() {
			<-start
			for range perClient {
				resp, err := hc.Post(hs.URL+"/api/v1/namespaces/default/configmaps", "application/json", bytes.NewReader(body))
				if err != nil {
					t.Errorf("transport error: %v", err)
					return
				}
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				mu.Lock()
				codes[resp.StatusCode]++
				if resp.StatusCode == http.StatusCreated {
					var cm corev1.ConfigMap
					if err := json.Unmarshal(data, &cm); err != nil {
						t.Errorf("decode: %v", err)
					}
					acked[cm.Name]++
				} else if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "1" {
					t.Errorf("429 without Retry-After: 1")
				}
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	tr.CloseIdleConnections()
	// What the server keeps once the clients are gone: the stored objects
	// (a few KiB each) and its caches, not the connections' buffers. The
	// bound is loose (the race detector inflates the heap); a leak of one
	// goroutine or buffer per request would pass it by far.
	grown := int64(liveHeap()) - int64(heapBefore)
	t.Logf("answers: %v; live heap grew %d KiB", codes, grown>>10)
	if limit := int64(64 << 20); grown > limit {
		t.Errorf("live heap grew by %d MiB after %d clients, want under %d MiB", grown>>20, clients, limit>>20)
	}
	for code, n := range codes {
		if code != http.StatusCreated && code != http.StatusTooManyRequests {
			t.Errorf("%d answers %d, want only 201 and 429", n, code)
		}
	}
	if codes[http.StatusCreated]+codes[http.StatusTooManyRequests] != clients*perClient {
		t.Errorf("answers %v, want %d in all", codes, clients*perClient)
	}
	if codes[http.StatusTooManyRequests] == 0 {
		t.Error("no request was refused: the limit did not bite")
	}
	resp, err := hc.Get(hs.URL + "/api/v1/namespaces/default/configmaps?labelSelector=load%3Dyes")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list corev1.ConfigMapList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	stored := map[string]int{}
	for _, cm := range list.Items {
		stored[cm.Name]++
	}
	if len(list.Items) != codes[http.StatusCreated] {
		t.Errorf("%d stored, %d acknowledged", len(list.Items), codes[http.StatusCreated])
	}
	for name, n := range acked {
		if n != 1 || stored[name] != 1 {
			t.Errorf("%s acknowledged %d times, stored %d times", name, n, stored[name])
		}
	}
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
