package etcd

import (
	"net"
	"net/url"
	"testing"
)

// FuzzParseListenURL checks that every URL the embedded member accepts to
// listen on is http(s) on a loopback host with a real port.
func FuzzParseListenURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:2379", "https://localhost:2380", "http://[::1]:1", "http://0.0.0.0:2379", "unix:///x", "http://127.0.0.1", "http://127.0.0.1:0", "%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := parseListenURL(s, false)
		if err != nil {
			return
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			t.Fatalf("accepted scheme %q in %q", u.Scheme, s)
		}
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil || port == "" || port == "0" {
			t.Fatalf("accepted %q without a port", s)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			t.Fatalf("accepted non-loopback host %q in %q", host, s)
		}
		if _, err := url.Parse(u.String()); err != nil {
			t.Fatalf("accepted URL %q does not round-trip: %v", s, err)
		}
	})
}
