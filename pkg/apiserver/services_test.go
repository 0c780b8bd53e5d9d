//lint:file-ignore SA1019 core/v1 Endpoints is deprecated but served, as kube-apiserver 1.37 still serves it
package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	testclock "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/storage"
	"github.com/kplane/kplane/pkg/storage/memory"
)

func svcPath(ns, name string) string {
	if name == "" {
		return fmt.Sprintf("/api/v1/namespaces/%s/services", ns)
	}
	return fmt.Sprintf("/api/v1/namespaces/%s/services/%s", ns, name)
}

func testService(name string, typ corev1.ServiceType, ports ...int32) *corev1.Service {
	s := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.ServiceSpec{Type: typ, Selector: map[string]string{"app": name}},
	}
	for i, p := range ports {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: fmt.Sprintf("p%d", i), Port: p})
	}
	return s
}

func (e *testEnv) createService(svc *corev1.Service) *corev1.Service {
	e.t.Helper()
	out := &corev1.Service{}
	e.mustCreate(svcPath("default", ""), svc, out)
	return out
}

// ipAddress returns the stored IPAddress of ip, or nil.
func (e *testEnv) ipAddress(ip string) *networkingv1.IPAddress {
	e.t.Helper()
	r := e.get("/apis/networking.k8s.io/v1/ipaddresses/" + ip)
	if r.code == 404 {
		return nil
	}
	r.expect(e.t, 200, "")
	out := &networkingv1.IPAddress{}
	r.decode(e.t, out)
	return out
}

func statusMessage(t testing.TB, r response) string {
	t.Helper()
	return r.status(t).Message
}

func TestServiceClusterIPAllocation(t *testing.T) {
	e := newTestEnv(t)
	svc := e.createService(testService("web", "", 80))
	ip := svc.Spec.ClusterIP
	if !strings.HasPrefix(ip, "10.") || ip == "10.96.0.1" || len(svc.Spec.ClusterIPs) != 1 || svc.Spec.ClusterIPs[0] != ip {
		t.Fatalf("clusterIP %q clusterIPs %v", ip, svc.Spec.ClusterIPs)
	}
	a := e.ipAddress(ip)
	if a == nil {
		t.Fatalf("no IPAddress %s", ip)
	}
	want := networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "web"}
	if a.Spec.ParentRef == nil || *a.Spec.ParentRef != want {
		t.Errorf("parentRef %+v", a.Spec.ParentRef)
	}
	if a.Labels["ipaddress.kubernetes.io/managed-by"] != "ipallocator.k8s.io" || a.Labels["ipaddress.kubernetes.io/ip-family"] != "IPv4" {
		t.Errorf("labels %v", a.Labels)
	}

	// A requested address is honoured.
	req := testService("fixed", "", 80)
	req.Spec.ClusterIP = "10.96.0.5"
	if got := e.createService(req); got.Spec.ClusterIP != "10.96.0.5" {
		t.Errorf("requested clusterIP: got %s", got.Spec.ClusterIP)
	}
	// Taken.
	dup := testService("dup", "", 80)
	dup.Spec.ClusterIP = "10.96.0.5"
	r := e.do("POST", svcPath("default", ""), dup)
	r.expect(t, 422, metav1.StatusReasonInvalid)
	if msg := statusMessage(t, r); !strings.Contains(msg, `spec.clusterIPs: Invalid value: ["10.96.0.5"]: failed to allocate IP 10.96.0.5: provided IP is already allocated`) {
		t.Errorf("taken: %s", msg)
	}
	// Outside the range.
	out := testService("out", "", 80)
	out.Spec.ClusterIP = "192.168.1.1"
	r = e.do("POST", svcPath("default", ""), out)
	r.expect(t, 422, metav1.StatusReasonInvalid)
	if msg := statusMessage(t, r); !strings.Contains(msg, "failed to allocate IP 192.168.1.1: the provided IP (192.168.1.1) is not in the valid range. The range of valid IPs is 10.96.0.0/12") {
		t.Errorf("out of range: %s", msg)
	}
	// The broadcast address is not in the range either.
	out.Spec.ClusterIP = "10.111.255.255"
	e.do("POST", svcPath("default", ""), out).expect(t, 422, metav1.StatusReasonInvalid)

	// Headless and ExternalName Services get none.
	headless := testService("headless", "", 80)
	headless.Spec.ClusterIP = "None"
	if got := e.createService(headless); got.Spec.ClusterIP != "None" {
		t.Errorf("headless clusterIP %q", got.Spec.ClusterIP)
	}
	ext := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}}
	if got := e.createService(ext); got.Spec.ClusterIP != "" || len(got.Spec.ClusterIPs) != 0 {
		t.Errorf("ExternalName clusterIP %q", got.Spec.ClusterIP)
	}
	var list networkingv1.IPAddressList
	e.get("/apis/networking.k8s.io/v1/ipaddresses").decode(t, &list)
	if len(list.Items) != 2 {
		t.Errorf("%d IPAddresses, want 2", len(list.Items))
	}

	// Deleting gives the address back; it can then be requested again.
	e.do("DELETE", svcPath("default", "fixed"), nil).expect(t, 200, "")
	if e.ipAddress("10.96.0.5") != nil {
		t.Fatal("IPAddress kept after delete")
	}
	if got := e.createService(dup); got.Spec.ClusterIP != "10.96.0.5" {
		t.Errorf("reuse: %s", got.Spec.ClusterIP)
	}
}

func TestServiceClusterIPExhaustion(t *testing.T) {
	// A /29 has 8 addresses: the network and broadcast addresses and the
	// kubernetes Service's leave 5.
	e := newTestEnv(t, func(c *Config) { c.ServiceClusterIPRange = "10.0.0.0/29" })
	seen := map[string]bool{}
	for i := range 5 {
		ip := e.createService(testService(fmt.Sprintf("s%d", i), "", 80)).Spec.ClusterIP
		if seen[ip] || ip == "10.0.0.0" || ip == "10.0.0.1" || ip == "10.0.0.7" {
			t.Fatalf("allocated %s (seen %v)", ip, seen)
		}
		seen[ip] = true
	}
	r := e.do("POST", svcPath("default", ""), testService("full", "", 80))
	r.expect(t, 500, metav1.StatusReasonInternalError)
	if msg := statusMessage(t, r); msg != "Internal error occurred: failed to allocate a serviceIP: range is full" {
		t.Errorf("full: %q", msg)
	}
	// Headless Services need no address and still go in.
	h := testService("h", "", 80)
	h.Spec.ClusterIP = "None"
	e.createService(h)
	// One delete makes room for one more.
	e.do("DELETE", svcPath("default", "s2"), nil).expect(t, 200, "")
	e.createService(testService("again", "", 80))
	// A failed create gives back what it claimed: a NodePort Service whose
	// requested node port is taken leaves no address claimed.
	e.do("DELETE", svcPath("default", "again"), nil).expect(t, 200, "")
	np := testService("np", corev1.ServiceTypeNodePort, 80)
	np.Spec.Ports[0].NodePort = 30080
	e.createService(np)
	e.do("DELETE", svcPath("default", "s3"), nil).expect(t, 200, "")
	np2 := testService("np2", corev1.ServiceTypeNodePort, 80)
	np2.Spec.Ports[0].NodePort = 30080
	e.do("POST", svcPath("default", ""), np2).expect(t, 422, metav1.StatusReasonInvalid)
	var list networkingv1.IPAddressList
	e.get("/apis/networking.k8s.io/v1/ipaddresses").decode(t, &list)
	if len(list.Items) != 4 {
		t.Errorf("%d IPAddresses after a failed create, want 4", len(list.Items))
	}
}

func TestServiceNodePortAllocation(t *testing.T) {
	e := newTestEnv(t)
	svc := e.createService(testService("np", corev1.ServiceTypeNodePort, 80, 443))
	p0, p1 := svc.Spec.Ports[0].NodePort, svc.Spec.Ports[1].NodePort
	if p0 < 30000 || p0 > 32767 || p1 < 30000 || p1 > 32767 || p0 == p1 {
		t.Fatalf("node ports %d %d", p0, p1)
	}
	if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
		t.Errorf("externalTrafficPolicy %q", svc.Spec.ExternalTrafficPolicy)
	}
	// A requested port that is taken, and one outside the range.
	taken := testService("taken", corev1.ServiceTypeNodePort, 80)
	taken.Spec.Ports[0].NodePort = p0
	r := e.do("POST", svcPath("default", ""), taken)
	r.expect(t, 422, metav1.StatusReasonInvalid)
	if msg := statusMessage(t, r); !strings.Contains(msg, fmt.Sprintf("spec.ports[0].nodePort: Invalid value: %d: provided port is already allocated", p0)) {
		t.Errorf("taken: %s", msg)
	}
	taken.Spec.Ports[0].NodePort = 20000
	r = e.do("POST", svcPath("default", ""), taken)
	r.expect(t, 422, metav1.StatusReasonInvalid)
	if msg := statusMessage(t, r); !strings.Contains(msg, "spec.ports[0].nodePort: Invalid value: 20000: provided port is not in the valid range. The range of valid ports is 30000-32767") {
		t.Errorf("out of range: %s", msg)
	}
	// A LoadBalancer gets node ports too; TCP and UDP of one port share one.
	lb := testService("lb", corev1.ServiceTypeLoadBalancer)
	lb.Spec.Ports = []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}, {Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP}}
	got := e.createService(lb)
	if got.Spec.Ports[0].NodePort == 0 || got.Spec.Ports[0].NodePort != got.Spec.Ports[1].NodePort {
		t.Errorf("shared node port: %+v", got.Spec.Ports)
	}
	if got.Spec.AllocateLoadBalancerNodePorts == nil || !*got.Spec.AllocateLoadBalancerNodePorts {
		t.Errorf("allocateLoadBalancerNodePorts %v", got.Spec.AllocateLoadBalancerNodePorts)
	}

	// An update that leaves the node ports out keeps them.
	upd := testService("np", corev1.ServiceTypeNodePort, 80, 443)
	upd.ResourceVersion = svc.ResourceVersion
	r = e.do("PUT", svcPath("default", "np"), upd)
	r.expect(t, 200, "")
	var after corev1.Service
	r.decode(t, &after)
	if after.Spec.Ports[0].NodePort != p0 || after.Spec.Ports[1].NodePort != p1 || after.Spec.ClusterIP != svc.Spec.ClusterIP {
		t.Fatalf("update lost allocations: %+v %s", after.Spec.Ports, after.Spec.ClusterIP)
	}
	// Changing the type to ClusterIP gives the node ports back.
	after.Spec.Type = corev1.ServiceTypeClusterIP
	r = e.do("PUT", svcPath("default", "np"), &after)
	r.expect(t, 200, "")
	var cip corev1.Service
	r.decode(t, &cip)
	if cip.Spec.Ports[0].NodePort != 0 || cip.Spec.ExternalTrafficPolicy != "" || cip.Spec.ClusterIP != svc.Spec.ClusterIP {
		t.Fatalf("ClusterIP after NodePort: %+v", cip.Spec)
	}
	taken.Spec.Ports[0].NodePort = p0
	e.createService(taken)
	// Changing to ExternalName gives the cluster IP back; and back again
	// to ClusterIP allocates one.
	cip.Spec.Type = corev1.ServiceTypeExternalName
	cip.Spec.ExternalName = "example.com"
	r = e.do("PUT", svcPath("default", "np"), &cip)
	r.expect(t, 200, "")
	var en corev1.Service
	r.decode(t, &en)
	if en.Spec.ClusterIP != "" || e.ipAddress(svc.Spec.ClusterIP) != nil {
		t.Fatalf("ExternalName kept %q", en.Spec.ClusterIP)
	}
	en.Spec.Type = corev1.ServiceTypeClusterIP
	en.Spec.ExternalName = ""
	r = e.do("PUT", svcPath("default", "np"), &en)
	r.expect(t, 200, "")
	var back corev1.Service
	r.decode(t, &back)
	if back.Spec.ClusterIP == "" || e.ipAddress(back.Spec.ClusterIP) == nil {
		t.Fatalf("no address after ExternalName: %q", back.Spec.ClusterIP)
	}
	// A failed update gives back what it claimed.
	back.Spec.Type = corev1.ServiceTypeNodePort
	back.Spec.Ports = []corev1.ServicePort{{Name: "a", Port: 80}, {Name: "b", Port: 81, NodePort: p0}}
	e.do("PUT", svcPath("default", "np"), &back).expect(t, 422, metav1.StatusReasonInvalid)
	ports := e.nodePortClaims()
	if len(ports) != 2 { // lb's one, taken's one, and nothing from the failed update
		t.Errorf("node port claims %v", ports)
	}
}

// nodePortClaims lists the claimed node ports in storage.
func (e *testEnv) nodePortClaims() []string {
	e.t.Helper()
	alloc := e.server.lookup(servicesGVR).hook.(*serviceAllocator)
	list := &networkingv1.IPAddressList{}
	if err := alloc.ports.GetList(context.Background(), nodePortRoot, storage.ListOptions{Recursive: true}, list); err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, item := range list.Items {
		out = append(out, item.Name+"="+item.Spec.ParentRef.Name)
	}
	return out
}

func TestServiceNodePortExhaustion(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.ServiceNodePortRange = "30000-30002" })
	e.createService(testService("a", corev1.ServiceTypeNodePort, 80, 81, 82))
	r := e.do("POST", svcPath("default", ""), testService("b", corev1.ServiceTypeNodePort, 80))
	r.expect(t, 500, metav1.StatusReasonInternalError)
	if msg := statusMessage(t, r); msg != "Internal error occurred: failed to allocate a nodePort: range is full" {
		t.Errorf("full: %q", msg)
	}
	// The failed create gave back its cluster IP.
	var list networkingv1.IPAddressList
	e.get("/apis/networking.k8s.io/v1/ipaddresses").decode(t, &list)
	if len(list.Items) != 1 {
		t.Errorf("%d IPAddresses", len(list.Items))
	}
}

func TestServiceAllocationsReleasedByDeleteCollection(t *testing.T) {
	e := newTestEnv(t)
	for i := range 3 {
		e.createService(testService(fmt.Sprintf("s%d", i), corev1.ServiceTypeNodePort, 80))
	}
	e.do("DELETE", svcPath("default", ""), nil).expect(t, 200, "")
	var list networkingv1.IPAddressList
	e.get("/apis/networking.k8s.io/v1/ipaddresses").decode(t, &list)
	if len(list.Items) != 0 || len(e.nodePortClaims()) != 0 {
		t.Errorf("left: %d IPAddresses, node ports %v", len(list.Items), e.nodePortClaims())
	}
}

func TestServiceFinalizerHoldsAllocations(t *testing.T) {
	e := newTestEnv(t)
	s := testService("held", corev1.ServiceTypeNodePort, 80)
	s.Finalizers = []string{"example.com/hold"}
	svc := e.createService(s)
	e.do("DELETE", svcPath("default", "held"), nil).expect(t, 200, "")
	if e.ipAddress(svc.Spec.ClusterIP) == nil {
		t.Fatal("released while the finalizer holds the Service")
	}
	r := e.do("PATCH", svcPath("default", "held"), `{"metadata":{"finalizers":null}}`, "Content-Type", "application/merge-patch+json")
	r.expect(t, 200, "")
	if e.ipAddress(svc.Spec.ClusterIP) != nil || len(e.nodePortClaims()) != 0 {
		t.Fatal("kept after the last finalizer went")
	}
}

// postJSON creates obj at url with a plain client, safe in goroutines.
func postJSON(client *http.Client, url string, obj any) (int, []byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return 0, nil, err
	}
	resp, err := client.Post(url, "application/json", bytes.NewReader(data))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.Bytes(), err
}

// createConcurrently creates n NodePort Services spread over the servers
// at the same time and returns them.
func createConcurrently(t *testing.T, urls []string, n int) []corev1.Service {
	t.Helper()
	var mu sync.Mutex
	var out []corev1.Service
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			url := urls[i%len(urls)] + svcPath("default", "")
			code, body, err := postJSON(http.DefaultClient, url, testService(fmt.Sprintf("c%d", i), corev1.ServiceTypeNodePort, 80))
			if err != nil || code != 201 {
				errs <- fmt.Errorf("create c%d: %d %s %v", i, code, body, err)
				return
			}
			var svc corev1.Service
			if err := json.Unmarshal(body, &svc); err != nil {
				errs <- err
				return
			}
			mu.Lock()
			out = append(out, svc)
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	return out
}

func checkUnique(t *testing.T, svcs []corev1.Service) {
	t.Helper()
	ips, ports := map[string]string{}, map[int32]string{}
	for _, s := range svcs {
		if prev, dup := ips[s.Spec.ClusterIP]; dup {
			t.Errorf("%s and %s both have %s", prev, s.Name, s.Spec.ClusterIP)
		}
		ips[s.Spec.ClusterIP] = s.Name
		np := s.Spec.Ports[0].NodePort
		if prev, dup := ports[np]; dup {
			t.Errorf("%s and %s both have node port %d", prev, s.Name, np)
		}
		ports[np] = s.Name
	}
}

func TestServiceConcurrentCreates(t *testing.T) {
	// A /27 (29 addresses to give out) and 40 node ports make collisions
	// between the concurrent creates likely.
	e := newTestEnv(t, func(c *Config) {
		c.ServiceClusterIPRange = "10.0.0.0/27"
		c.ServiceNodePortRange = "30000-30039"
	})
	svcs := createConcurrently(t, []string{e.http.URL}, 28)
	if len(svcs) != 28 {
		t.Fatalf("%d created", len(svcs))
	}
	checkUnique(t, svcs)
}

// sharedBackendServers starts n API servers on one memory backend.
func sharedBackendServers(t *testing.T, backend *memory.Backend, n int, mutate func(*Config)) []*testEnv {
	t.Helper()
	clk := testclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	var out []*testEnv
	for range n {
		cfg := Config{Backend: backend, Clock: clk, Admission: noServiceAccounts}
		if mutate != nil {
			mutate(&cfg)
		}
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s.Handler())
		t.Cleanup(hs.Close)
		out = append(out, &testEnv{t: t, clock: clk, server: s, http: hs})
	}
	return out
}

func TestServiceAllocationAcrossServers(t *testing.T) {
	backend, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = backend.Close() })
	small := func(c *Config) {
		c.ServiceClusterIPRange = "10.0.0.0/27"
		c.ServiceNodePortRange = "30000-30039"
	}
	envs := sharedBackendServers(t, backend, 2, small)
	svcs := createConcurrently(t, []string{envs[0].http.URL, envs[1].http.URL}, 28)
	checkUnique(t, svcs)

	// A restarted server sees what was allocated: it hands out nothing
	// taken, and refuses a taken address.
	restarted := sharedBackendServers(t, backend, 1, small)[0]
	more := restarted.createService(testService("after", corev1.ServiceTypeNodePort, 80))
	checkUnique(t, append(svcs, *more))
	r := restarted.do("POST", svcPath("default", ""), testService("full", "", 80))
	r.expect(t, 500, metav1.StatusReasonInternalError)
	dup := testService("dup", "", 80)
	dup.Spec.ClusterIP = svcs[0].Spec.ClusterIP
	restarted.do("POST", svcPath("default", ""), dup).expect(t, 422, metav1.StatusReasonInvalid)
	// Deleted on one server, free on the other.
	envs[0].do("DELETE", svcPath("default", svcs[0].Name), nil).expect(t, 200, "")
	if got := envs[1].createService(dup); got.Spec.ClusterIP != svcs[0].Spec.ClusterIP {
		t.Errorf("reuse across servers: %s", got.Spec.ClusterIP)
	}
}

func TestServiceCIDRCreated(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.ServiceClusterIPRange = "10.100.0.0/16" })
	r := e.get("/apis/networking.k8s.io/v1/servicecidrs/kubernetes")
	r.expect(t, 200, "")
	var c networkingv1.ServiceCIDR
	r.decode(t, &c)
	if len(c.Spec.CIDRs) != 1 || c.Spec.CIDRs[0] != "10.100.0.0/16" {
		t.Errorf("cidrs %v", c.Spec.CIDRs)
	}
	if len(c.Status.Conditions) != 1 || c.Status.Conditions[0].Type != "Ready" || c.Status.Conditions[0].Status != metav1.ConditionTrue {
		t.Errorf("status %+v", c.Status)
	}
	if _, err := New(Config{Backend: e.server.cfg.Backend, ServiceClusterIPRange: "10.0.0.0/33"}); err == nil {
		t.Error("bad range accepted")
	}
	if _, err := New(Config{Backend: e.server.cfg.Backend, ServiceNodePortRange: "3-1"}); err == nil {
		t.Error("bad port range accepted")
	}
}

func TestKubernetesService(t *testing.T) {
	backend, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = backend.Close() })
	s, err := New(Config{Backend: backend, ShutdownTimeout: time.Second, Admission: noServiceAccounts})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	base := "http://" + ln.Addr().String()
	getJSON := func(path string, out any) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			resp, err := http.Get(base + path)
			if err == nil && resp.StatusCode == 200 {
				defer resp.Body.Close()
				if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				resp.Body.Close()
			}
			if time.Now().After(deadline) {
				t.Fatalf("get %s: %v", path, err)
			}
			time.Sleep(20 * time.Millisecond) // waiting for Run to serve
		}
	}
	var svc corev1.Service
	getJSON(svcPath("default", "kubernetes"), &svc)
	want := []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt(port)}}
	if svc.Spec.ClusterIP != "10.96.0.1" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0] != want[0] {
		t.Errorf("kubernetes Service %+v", svc.Spec)
	}
	var ep corev1.Endpoints
	getJSON("/api/v1/namespaces/default/endpoints/kubernetes", &ep)
	if len(ep.Subsets) != 1 || ep.Subsets[0].Addresses[0].IP != "127.0.0.1" || ep.Subsets[0].Ports[0].Port != int32(port) || ep.Subsets[0].Ports[0].Name != "https" {
		t.Errorf("endpoints %+v", ep.Subsets)
	}
	var slice discoveryv1.EndpointSlice
	getJSON("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes", &slice)
	if slice.AddressType != discoveryv1.AddressTypeIPv4 || slice.Endpoints[0].Addresses[0] != "127.0.0.1" || *slice.Ports[0].Port != int32(port) ||
		slice.Labels[discoveryv1.LabelServiceName] != "kubernetes" {
		t.Errorf("slice %+v", slice)
	}
	var a networkingv1.IPAddress
	getJSON("/apis/networking.k8s.io/v1/ipaddresses/10.96.0.1", &a)
	if a.Spec.ParentRef == nil || a.Spec.ParentRef.Name != "kubernetes" {
		t.Errorf("IPAddress %+v", a.Spec)
	}
}

func TestServiceServing(t *testing.T) {
	e := newTestEnv(t)
	svc := e.createService(testService("web", corev1.ServiceTypeNodePort, 80))
	e.createService(testService("other", "", 80))

	// Discovery: short name, category, status subresource.
	var rl metav1.APIResourceList
	e.get("/api/v1").decode(t, &rl)
	found := map[string]metav1.APIResource{}
	for _, r := range rl.APIResources {
		found[r.Name] = r
	}
	if r := found["services"]; len(r.ShortNames) != 1 || r.ShortNames[0] != "svc" || len(r.Categories) != 1 || r.Categories[0] != "all" || !r.Namespaced {
		t.Errorf("services discovery %+v", r)
	}
	if _, ok := found["services/status"]; !ok {
		t.Error("no services/status")
	}
	if r := found["endpoints"]; len(r.ShortNames) != 1 || r.ShortNames[0] != "ep" {
		t.Errorf("endpoints discovery %+v", r)
	}
	for _, gv := range []string{"/apis/networking.k8s.io/v1", "/apis/discovery.k8s.io/v1"} {
		e.get(gv).expect(t, 200, "")
	}

	// Field selectors on spec.type and spec.clusterIP.
	var list corev1.ServiceList
	e.get(svcPath("default", "")+"?fieldSelector=spec.type%3DNodePort").decode(t, &list)
	if len(list.Items) != 1 || list.Items[0].Name != "web" {
		t.Errorf("spec.type selector: %d items", len(list.Items))
	}
	e.get(svcPath("default", "")+"?fieldSelector=spec.clusterIP%3D"+svc.Spec.ClusterIP).decode(t, &list)
	if len(list.Items) != 1 || list.Items[0].Name != "web" {
		t.Errorf("spec.clusterIP selector: %d items", len(list.Items))
	}

	// A strategic merge patch that does not mention the allocations keeps them.
	r := e.do("PATCH", svcPath("default", "web"), `{"spec":{"selector":{"app":"new"}}}`, "Content-Type", "application/strategic-merge-patch+json")
	r.expect(t, 200, "")
	var patched corev1.Service
	r.decode(t, &patched)
	if patched.Spec.ClusterIP != svc.Spec.ClusterIP || patched.Spec.Ports[0].NodePort != svc.Spec.Ports[0].NodePort || patched.Spec.Selector["app"] != "new" {
		t.Errorf("patched %+v", patched.Spec)
	}
	// Changing the cluster IP is refused.
	r = e.do("PATCH", svcPath("default", "web"), `{"spec":{"clusterIP":"10.96.0.99","clusterIPs":["10.96.0.99"]}}`, "Content-Type", "application/merge-patch+json")
	r.expect(t, 422, metav1.StatusReasonInvalid)
	if msg := statusMessage(t, r); !strings.Contains(msg, `spec.clusterIPs[0]: Invalid value: "10.96.0.99": may not change once set`) {
		t.Errorf("immutable: %s", msg)
	}
	if e.ipAddress("10.96.0.99") != nil {
		t.Error("a refused update claimed an address")
	}

	// Status writes keep the spec and its allocations.
	patched.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}
	patched.Spec.Ports[0].NodePort = 0
	r = e.do("PUT", svcPath("default", "web")+"/status", &patched)
	r.expect(t, 200, "")
	var st corev1.Service
	r.decode(t, &st)
	if st.Spec.Ports[0].NodePort != svc.Spec.Ports[0].NodePort || len(st.Status.LoadBalancer.Ingress) != 1 {
		t.Errorf("status write %+v", st)
	}

	// Table.
	r = e.do("GET", svcPath("default", ""), nil, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	r.expect(t, 200, "")
	var tb metav1.Table
	r.decode(t, &tb)
	if len(tb.Rows) != 2 || len(tb.ColumnDefinitions) != 7 || tb.ColumnDefinitions[4].Name != "Port(s)" {
		t.Fatalf("table %+v", tb)
	}
	want := fmt.Sprintf("80:%d/TCP", svc.Spec.Ports[0].NodePort)
	var cells []string
	for _, row := range tb.Rows {
		cells = append(cells, fmt.Sprint(row.Cells[4]))
	}
	if !strings.Contains(strings.Join(cells, " "), want) {
		t.Errorf("ports cells %v, want %s", cells, want)
	}
}

// TestServiceReapply sends the same manifest twice, as kubectl apply does:
// a create, then a strategic merge patch of the whole manifest.
func TestServiceReapply(t *testing.T) {
	e := newTestEnv(t)
	manifest := `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"type":"NodePort","selector":{"app":"web"},"ports":[{"port":80}]}}`
	var first corev1.Service
	e.mustCreate(svcPath("default", ""), manifest, &first)
	apply := func() corev1.Service {
		t.Helper()
		r := e.do("PATCH", svcPath("default", "web"), manifest, "Content-Type", "application/strategic-merge-patch+json")
		r.expect(t, 200, "")
		var s corev1.Service
		r.decode(t, &s)
		return s
	}
	if first.Spec.ClusterIP == "" || first.Spec.Ports[0].NodePort == 0 {
		t.Fatalf("applied %+v", first.Spec)
	}
	second := apply()
	if second.Spec.ClusterIP != first.Spec.ClusterIP || second.Spec.Ports[0].NodePort != first.Spec.Ports[0].NodePort {
		t.Errorf("re-apply changed allocations: %+v then %+v", first.Spec, second.Spec)
	}
	var list networkingv1.IPAddressList
	e.get("/apis/networking.k8s.io/v1/ipaddresses").decode(t, &list)
	if len(list.Items) != 1 || len(e.nodePortClaims()) != 1 {
		t.Errorf("claims: %d IPAddresses, node ports %v", len(list.Items), e.nodePortClaims())
	}
}

func TestLoadBalancerWithoutNodePorts(t *testing.T) {
	e := newTestEnv(t)
	lb := testService("lb", corev1.ServiceTypeLoadBalancer, 80, 81)
	lb.Spec.AllocateLoadBalancerNodePorts = ptrTo(false)
	lb.Spec.Ports[1].NodePort = 31001
	got := e.createService(lb)
	if got.Spec.Ports[0].NodePort != 0 || got.Spec.Ports[1].NodePort != 31001 {
		t.Fatalf("ports %+v", got.Spec.Ports)
	}
	if claims := e.nodePortClaims(); len(claims) != 1 || claims[0] != "31001=lb" {
		t.Errorf("claims %v", claims)
	}
	e.do("DELETE", svcPath("default", "lb"), nil).expect(t, 200, "")
	if claims := e.nodePortClaims(); len(claims) != 0 {
		t.Errorf("claims after delete %v", claims)
	}
	// Local traffic policy gets a health check node port.
	local := testService("local", corev1.ServiceTypeLoadBalancer, 80)
	local.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	got = e.createService(local)
	if got.Spec.HealthCheckNodePort == 0 || got.Spec.HealthCheckNodePort == got.Spec.Ports[0].NodePort || len(e.nodePortClaims()) != 2 {
		t.Errorf("health check node port %d, claims %v", got.Spec.HealthCheckNodePort, e.nodePortClaims())
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestServiceDryRun(t *testing.T) {
	e := newTestEnv(t)
	taken := e.createService(testService("taken", corev1.ServiceTypeNodePort, 80))
	r := e.do("POST", svcPath("default", "")+"?dryRun=All", testService("dry", corev1.ServiceTypeNodePort, 80))
	r.expect(t, 201, "")
	var dry corev1.Service
	r.decode(t, &dry)
	if dry.Spec.ClusterIP == "" || dry.Spec.ClusterIP == taken.Spec.ClusterIP || dry.Spec.Ports[0].NodePort == 0 || dry.Spec.Ports[0].NodePort == taken.Spec.Ports[0].NodePort {
		t.Errorf("dry run allocations %+v", dry.Spec)
	}
	if e.ipAddress(dry.Spec.ClusterIP) != nil || len(e.nodePortClaims()) != 1 {
		t.Error("a dry run claimed")
	}
	clash := testService("clash", "", 80)
	clash.Spec.ClusterIP = taken.Spec.ClusterIP
	r = e.do("POST", svcPath("default", "")+"?dryRun=All", clash)
	r.expect(t, 422, metav1.StatusReasonInvalid)
	if msg := statusMessage(t, r); !strings.Contains(msg, "provided IP is already allocated") {
		t.Errorf("dry run clash: %s", msg)
	}
	// A dry-run type change to ClusterIP keeps the node ports claimed.
	taken.Spec.Type = corev1.ServiceTypeClusterIP
	r = e.do("PUT", svcPath("default", "taken")+"?dryRun=All", taken)
	r.expect(t, 200, "")
	if len(e.nodePortClaims()) != 1 {
		t.Error("a dry-run update released")
	}
}

func TestServiceAllocationThroughWatchCache(t *testing.T) {
	e := newCachedTestEnv(t)
	a := e.createService(testService("a", corev1.ServiceTypeNodePort, 80))
	b := e.createService(testService("b", corev1.ServiceTypeNodePort, 80))
	checkUnique(t, []corev1.Service{*a, *b})
	if claims := e.nodePortClaims(); len(claims) != 2 {
		t.Errorf("node port claims through the cache: %v", claims)
	}
	e.do("DELETE", svcPath("default", "a"), nil).expect(t, 200, "")
	if claims := e.nodePortClaims(); len(claims) != 1 || e.ipAddress(a.Spec.ClusterIP) != nil {
		t.Errorf("after delete: %v", claims)
	}
}

func TestEndpointsDeprecationWarning(t *testing.T) {
	e := newTestEnv(t)
	const want = `299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"`
	r := e.get("/api/v1/namespaces/default/endpoints")
	r.expect(t, 200, "")
	if got := r.header.Get("Warning"); got != want {
		t.Errorf("list warning %q", got)
	}
	if got := e.get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices").header.Get("Warning"); got != "" {
		t.Errorf("endpointslices warned %q", got)
	}
}

func TestServiceDeleteReturnsTheService(t *testing.T) {
	e := newTestEnv(t)
	e.createService(testService("web", "", 80))
	r := e.do("DELETE", svcPath("default", "web"), nil)
	r.expect(t, 200, "")
	var got corev1.Service
	r.decode(t, &got)
	if got.Kind != "Service" || got.Name != "web" || got.Spec.ClusterIP == "" {
		t.Errorf("delete answered %s", r.body)
	}
}
