package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kplane/kplane/pkg/client"
)

// benchCounters are the counters of the API server's /metrics that the
// bench reports, at one moment.
type benchCounters struct {
	// requests is apiserver_request_total summed by verb and by
	// resource ("pods", "pods/status"): requests[verb][resource].
	requests map[string]map[string]float64
	// codes is apiserver_request_total summed by response code.
	codes map[string]float64
	// etcd holds etcd's counters by benchEtcdCounters key; nil when the
	// server has no embedded etcd.
	etcd map[string]float64
}

// benchEtcdCounters are the etcd figures reported per phase: the key in
// the results and the family it is read from (a histogram's sample count
// is its number of observations).
var benchEtcdCounters = []struct{ key, family string }{
	{"puts", "etcd_mvcc_put_total"},
	{"deletes", "etcd_mvcc_delete_total"},
	{"txns", "etcd_mvcc_txn_total"},
	{"ranges", "etcd_mvcc_range_total"},
	{"wal_fsyncs", "etcd_disk_wal_fsync_duration_seconds"},
	{"backend_commits", "etcd_disk_backend_commit_duration_seconds"},
}

// scrapeBenchCounters reads the server's /metrics.
func scrapeBenchCounters(ctx context.Context, c *client.Client) (benchCounters, error) {
	resp, err := c.Do(ctx, client.Request{Path: "/metrics", Header: http.Header{"Accept": {"text/plain"}}})
	if err != nil {
		return benchCounters{}, fmt.Errorf("scrape /metrics: %w", err)
	}
	return parseBenchCounters(resp.Body)
}

func parseBenchCounters(text []byte) (benchCounters, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return benchCounters{}, fmt.Errorf("parse /metrics: %w", err)
	}
	out := benchCounters{requests: map[string]map[string]float64{}, codes: map[string]float64{}}
	if mf := families["apiserver_request_total"]; mf != nil {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			res := labels["resource"]
			if sub := labels["subresource"]; sub != "" {
				res += "/" + sub
			}
			if res == "" {
				res = "(non-resource)"
			}
			verb := labels["verb"]
			if out.requests[verb] == nil {
				out.requests[verb] = map[string]float64{}
			}
			out.requests[verb][res] += m.GetCounter().GetValue()
			out.codes[labels["code"]] += m.GetCounter().GetValue()
		}
	}
	for _, ec := range benchEtcdCounters {
		mf := families[ec.family]
		if mf == nil {
			continue
		}
		if out.etcd == nil {
			out.etcd = map[string]float64{}
		}
		out.etcd[ec.key] += sumFamily(mf)
	}
	return out, nil
}

// sumFamily adds up a counter family's values or a histogram family's
// sample counts.
func sumFamily(mf *dto.MetricFamily) float64 {
	var sum float64
	for _, m := range mf.GetMetric() {
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// benchRequests are the API requests of one phase.
type benchRequests struct {
	// Total is the number of requests.
	Total int64 `json:"total"`
	// ByVerb counts them by verb (CREATE, GET, LIST, PATCH, ...).
	ByVerb map[string]int64 `json:"by_verb"`
	// ByVerbResource counts them by "VERB resource[/subresource]".
	ByVerbResource map[string]int64 `json:"by_verb_resource"`
	// ByCode counts them by HTTP response code ("200", "201", "409", ...).
	ByCode map[string]int64 `json:"by_code"`
}

// benchEtcd are etcd's operations and syncs in one phase. Txns counts
// only transactions of more than one operation (etcd_mvcc_txn_total), so
// a single compare-and-put is a put and no txn.
type benchEtcd struct {
	Puts           int64 `json:"puts"`
	Deletes        int64 `json:"deletes"`
	Txns           int64 `json:"txns"`
	Ranges         int64 `json:"ranges"`
	WALFsyncs      int64 `json:"wal_fsyncs"`
	BackendCommits int64 `json:"backend_commits"`
}

// deltaRequests is the requests counted between before and after.
func deltaRequests(before, after benchCounters) benchRequests {
	r := benchRequests{ByVerb: map[string]int64{}, ByVerbResource: map[string]int64{}, ByCode: map[string]int64{}}
	for verb, byRes := range after.requests {
		for res, n := range byRes {
			d := int64(n - before.requests[verb][res])
			if d <= 0 {
				continue
			}
			r.Total += d
			r.ByVerb[verb] += d
			r.ByVerbResource[verb+" "+res] += d
		}
	}
	for code, n := range after.codes {
		if d := int64(n - before.codes[code]); d > 0 {
			r.ByCode[code] = d
		}
	}
	return r
}

// deltaEtcd is etcd's counters between before and after; nil without etcd.
func deltaEtcd(before, after benchCounters) *benchEtcd {
	if after.etcd == nil {
		return nil
	}
	d := func(key string) int64 { return int64(after.etcd[key] - before.etcd[key]) }
	return &benchEtcd{
		Puts: d("puts"), Deletes: d("deletes"), Txns: d("txns"), Ranges: d("ranges"),
		WALFsyncs: d("wal_fsyncs"), BackendCommits: d("backend_commits"),
	}
}
