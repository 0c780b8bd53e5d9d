package apiserver

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/storage"
)

// benchEncodings are the Accept headers the encoding benchmarks compare,
// on the same server.
var benchEncodings = []struct{ name, accept string }{
	{"json", "application/json"},
	{"protobuf", protobufType},
}

// BenchmarkList10kPodsEncoding lists a namespace of 10,000 pods in JSON
// and in protobuf.
func BenchmarkList10kPodsEncoding(b *testing.B) {
	e, c := benchEnv(b)
	res := e.server.lookup(corev1.SchemeGroupVersion.WithResource("pods"))
	for i := range 10000 {
		p := testPod(fmt.Sprintf("p%05d", i), map[string]string{"app": "bench"})
		p.Namespace = "default"
		if _, err := e.server.createObject(context.Background(), res, "default", p, false); err != nil {
			b.Fatal(err)
		}
	}
	for _, enc := range benchEncodings {
		b.Run(enc.name, func(b *testing.B) {
			req, err := http.NewRequest("GET", e.http.URL+podPath("default", ""), nil)
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Accept", enc.accept)
			var size int64
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				size, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("list: %d", resp.StatusCode)
				}
			}
			b.ReportMetric(float64(size), "bytes/list")
		})
	}
}

// BenchmarkWatchFanoutEncoding measures one write reaching 100 watchers
// over HTTP, in JSON and in protobuf; an op is one write and its 100
// events. The watchers only split the stream into events (lines, or
// length-delimited frames), so that the server's encoding is what differs.
func BenchmarkWatchFanoutEncoding(b *testing.B) {
	for _, enc := range benchEncodings {
		b.Run(enc.name, func(b *testing.B) {
			benchWatchFanout(b, enc.accept, func(r io.Reader) func() error {
				return splitEvents(bufio.NewReaderSize(r, 64<<10), enc.accept != "application/json")
			})
		})
	}
}

// splitEvents returns a function reading one event of a watch stream:
// a JSON line, or a length-delimited protobuf frame.
func splitEvents(r *bufio.Reader, frames bool) func() error {
	var head [4]byte
	buf := make([]byte, 0, 4096)
	return func() error {
		if !frames {
			_, err := r.ReadSlice('\n')
			return err
		}
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return err
		}
		n := int(binary.BigEndian.Uint32(head[:]))
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		_, err := io.ReadFull(r, buf[:n])
		return err
	}
}

// BenchmarkEncodeEvent measures what one watcher's encoding of one event
// costs the server: JSON reuses the object's stored JSON, protobuf
// encodes the object.
func BenchmarkEncodeEvent(b *testing.B) {
	e := newTestEnv(b)
	var created corev1.Pod
	e.mustCreate(podPath("default", ""), testPod("p", map[string]string{"app": "bench"}), &created)
	res := e.server.lookup(corev1.SchemeGroupVersion.WithResource("pods"))
	raw, err := storage.JSONCodec{}.Encode(&created)
	if err != nil {
		b.Fatal(err)
	}
	ev := storage.Event{Type: watch.Added, Object: &created, Raw: raw}
	for _, f := range []struct {
		name string
		f    format
	}{{"json", format{media: mediaJSON}}, {"protobuf", format{media: mediaProtobuf}}} {
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if len(e.server.encodeEvent(res, ev, f.f, metav1.TableOptions{})) == 0 {
					b.Fatal("empty event")
				}
			}
		})
	}
}
