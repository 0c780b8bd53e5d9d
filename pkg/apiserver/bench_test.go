package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// benchEnv is a server over loopback HTTP with a client that keeps enough
// idle connections for parallel benchmarks.
func benchEnv(b *testing.B) (*testEnv, *http.Client) {
	e := newTestEnv(b)
	tr := e.http.Client().Transport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	c := &http.Client{Transport: tr}
	b.Cleanup(tr.CloseIdleConnections)
	return e, c
}

func benchDo(b *testing.B, c *http.Client, method, url string, body []byte, want int) {
	benchDoType(b, c, method, url, "application/json", body, want)
}

func benchDoType(b *testing.B, c *http.Client, method, url, contentType string, body []byte, want int) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		b.Fatalf("%s %s: %d", method, url, resp.StatusCode)
	}
}

func podJSON(b *testing.B, name string) []byte {
	data, err := json.Marshal(testPod(name, map[string]string{"app": "bench"}))
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func BenchmarkCreatePod(b *testing.B) {
	e, c := benchEnv(b)
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			benchDo(b, c, "POST", e.http.URL+podPath("default", ""), podJSON(b, fmt.Sprintf("p%d", n.Add(1))), 201)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

func BenchmarkGetPod(b *testing.B) {
	e, c := benchEnv(b)
	benchDo(b, c, "POST", e.http.URL+podPath("default", ""), podJSON(b, "p"), 201)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			benchDo(b, c, "GET", e.http.URL+podPath("default", "p"), nil, 200)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkList10kPods lists a namespace of 10,000 pods.
func BenchmarkList10kPods(b *testing.B) {
	e, c := benchEnv(b)
	ns := e.server.lookup(corev1.SchemeGroupVersion.WithResource("pods"))
	for i := range 10000 {
		p := testPod(fmt.Sprintf("p%05d", i), nil)
		p.Namespace = "default"
		if _, err := e.server.createObject(context.Background(), ns, "default", p, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		benchDo(b, c, "GET", e.http.URL+podPath("default", ""), nil, 200)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lists/s")
	b.ReportMetric(float64(b.N)*10000/b.Elapsed().Seconds(), "pods/s")
}

// BenchmarkWatchFanout measures one write reaching 100 watchers over HTTP.
func BenchmarkWatchFanout(b *testing.B) {
	benchWatchFanout(b, "application/json", func(r io.Reader) func() error {
		dec := json.NewDecoder(r)
		return func() error {
			var ev rawEvent
			return dec.Decode(&ev)
		}
	})
}

// benchWatchFanout measures one write reaching 100 watchers over HTTP,
// whose Accept header is accept; each watcher reads its stream with the
// function read returns, which reads one event.
func benchWatchFanout(b *testing.B, accept string, read func(io.Reader) func() error) {
	const watchers = 100
	e, c := benchEnv(b)
	rv := listRV(b, e, podPath("default", ""))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	received := make(chan struct{}, watchers)
	for range watchers {
		req, err := http.NewRequestWithContext(ctx, "GET", e.http.URL+podPath("default", "")+"?watch=true&resourceVersion="+rv, nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Accept", accept)
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		next := read(resp.Body)
		wg.Go(func() {
			defer resp.Body.Close()
			for next() == nil {
				select {
				case received <- struct{}{}:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	b.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		benchDo(b, c, "POST", e.http.URL+podPath("default", ""), podJSON(b, fmt.Sprintf("w%d", i)), 201)
		for range watchers {
			<-received
		}
	}
	b.ReportMetric(float64(b.N)*watchers/b.Elapsed().Seconds(), "events/s")
}
