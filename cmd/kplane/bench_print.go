package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
)

// printBench writes the results as tables.
func printBench(out io.Writer, r *benchResult) {
	fmt.Fprintf(out, "kplane bench: %d replicas on %d simulated nodes, %s storage, %s/%s with %d CPUs; up serving in %.2fs\n\n",
		r.Replicas, r.Nodes, r.Storage, r.GOOS, r.GOARCH, r.CPUs, r.StartupSeconds)
	phases := []struct {
		name string
		p    *benchPhaseStats
	}{{"create", &r.Create}, {"rollout", &r.Rollout}, {"delete", &r.Delete}}

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tmilestone\tseconds\t")
	for _, ph := range phases {
		name := ph.name
		for _, m := range ph.p.order {
			fmt.Fprintf(tw, "%s\t%s\t%.3f\t\n", name, m.label, ph.p.Milestones[m.name])
			name = ""
		}
	}
	_ = tw.Flush()

	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "requests\tcreate\trollout\tdelete\t")
	verbs := map[string]bool{}
	rows := map[string]bool{}
	for _, ph := range phases {
		for v := range ph.p.Requests.ByVerb {
			verbs[v] = true
		}
		for k := range ph.p.Requests.ByVerbResource {
			rows[k] = true
		}
	}
	for _, v := range slices.Sorted(maps.Keys(verbs)) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t\n", v, r.Create.Requests.ByVerb[v], r.Rollout.Requests.ByVerb[v], r.Delete.Requests.ByVerb[v])
	}
	fmt.Fprintf(tw, "total\t%d\t%d\t%d\t\n", r.Create.Requests.Total, r.Rollout.Requests.Total, r.Delete.Requests.Total)
	codes := map[string]bool{}
	for _, ph := range phases {
		for c := range ph.p.Requests.ByCode {
			codes[c] = true
		}
	}
	for _, c := range slices.Sorted(maps.Keys(codes)) {
		fmt.Fprintf(tw, "code %s\t%d\t%d\t%d\t\n", c, r.Create.Requests.ByCode[c], r.Rollout.Requests.ByCode[c], r.Delete.Requests.ByCode[c])
	}
	fmt.Fprintln(tw, "\t\t\t\t")
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t\n", k, r.Create.Requests.ByVerbResource[k], r.Rollout.Requests.ByVerbResource[k], r.Delete.Requests.ByVerbResource[k])
	}
	_ = tw.Flush()

	if r.Create.Etcd != nil {
		fmt.Fprintln(out)
		tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "etcd\tcreate\trollout\tdelete\t")
		for _, row := range []struct {
			name string
			get  func(*benchEtcd) int64
		}{
			{"puts", func(e *benchEtcd) int64 { return e.Puts }},
			{"deletes", func(e *benchEtcd) int64 { return e.Deletes }},
			{"multi-op txns", func(e *benchEtcd) int64 { return e.Txns }},
			{"ranges", func(e *benchEtcd) int64 { return e.Ranges }},
			{"WAL fsyncs", func(e *benchEtcd) int64 { return e.WALFsyncs }},
			{"backend commits", func(e *benchEtcd) int64 { return e.BackendCommits }},
		} {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t\n", row.name, row.get(r.Create.Etcd), row.get(r.Rollout.Etcd), row.get(r.Delete.Etcd))
		}
		_ = tw.Flush()
	}

	fmt.Fprintln(out)
	cpu := func(p *benchPhaseStats) string {
		if p.CPUSeconds == nil {
			return "n/a"
		}
		return fmt.Sprintf("%.1f", *p.CPUSeconds)
	}
	fmt.Fprintf(out, "kplane up CPU seconds: create %s, rollout %s, delete %s\n", cpu(&r.Create), cpu(&r.Rollout), cpu(&r.Delete))
	if r.Process == nil {
		fmt.Fprintln(out, "kplane up process: peak RSS n/a, final RSS n/a, CPU n/a")
		return
	}
	const mib = 1 << 20
	fmt.Fprintf(out, "kplane up process: peak RSS %.1f MiB, final RSS %.1f MiB, CPU %.1f s\n",
		float64(r.Process.PeakRSSBytes)/mib, float64(r.Process.RSSBytes)/mib, r.Process.CPUSeconds)
}
