package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/spf13/cobra"

	"github.com/kplane/kplane/pkg/client"
)

// tableAccept asks the server for a meta.k8s.io/v1 Table.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"

func newGetCommand() *cobra.Command {
	o := &cliOptions{}
	var output, selector string
	cmd := &cobra.Command{
		Use:   "get TYPE[/NAME] [NAME...]",
		Short: "Show resources as the server prints them",
		Long: `Show resources. The columns are the server's (a Table, as kubectl gets them);
-o json or -o yaml prints the objects, -o name their names.`,
		Example: `  kplane get pods
  kplane get deployment/web -o yaml
  kplane get rs -A -l app=web`,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, rs, err := o.connect()
			if err != nil {
				return err
			}
			r, names, err := rs.splitTypeName(args)
			if err != nil {
				return err
			}
			if o.allNamespaces {
				if len(names) > 0 {
					return fmt.Errorf("a resource cannot be retrieved by name across all namespaces")
				}
				ns = ""
			}
			switch output {
			case "", "wide", "json", "yaml", "name":
			default:
				return fmt.Errorf("--output must be one of wide, json, yaml or name, not %q", output)
			}
			return runGet(cmd, c, r, ns, names, selector, output, o.allNamespaces)
		},
	}
	o.addFlags(cmd, true)
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: wide, json, yaml or name (default the server's table)")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "label selector, such as app=web")
	return cmd
}

func runGet(cmd *cobra.Command, c *client.Client, r apiResource, ns string, names []string, selector, output string, allNS bool) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	paths := []string{r.path(ns)}
	if len(names) > 0 {
		paths = paths[:0]
		for _, n := range names {
			paths = append(paths, r.path(ns)+"/"+url.PathEscape(n))
		}
	}
	q := url.Values{}
	if selector != "" && len(names) == 0 {
		q.Set("labelSelector", selector)
	}
	if output == "" || output == "wide" {
		q.Set("includeObject", "Metadata")
		var table metav1.Table
		for _, p := range paths {
			resp, err := c.Do(ctx, client.Request{Path: p, Query: q, Header: http.Header{"Accept": {tableAccept}}})
			if err != nil {
				return err
			}
			var t metav1.Table
			if err := json.Unmarshal(resp.Body, &t); err != nil {
				return fmt.Errorf("decode table: %w", err)
			}
			if table.ColumnDefinitions == nil {
				table.ColumnDefinitions = t.ColumnDefinitions
			}
			table.Rows = append(table.Rows, t.Rows...)
		}
		if len(table.Rows) == 0 {
			where := ""
			if r.namespaced && !allNS {
				where = fmt.Sprintf(" in %s namespace", ns)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "No resources found%s.\n", where)
			return nil
		}
		return printTable(out, &table, output == "wide", allNS && r.namespaced)
	}
	var objs []json.RawMessage
	for _, p := range paths {
		resp, err := c.Do(ctx, client.Request{Path: p, Query: q})
		if err != nil {
			return err
		}
		if len(names) > 0 {
			objs = append(objs, resp.Body)
			continue
		}
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(resp.Body, &list); err != nil {
			return fmt.Errorf("decode list: %w", err)
		}
		for _, item := range list.Items {
			// Items of a list carry no apiVersion and kind; print them as
			// the objects they are.
			var m map[string]any
			if err := json.Unmarshal(item, &m); err != nil {
				return err
			}
			m["apiVersion"], m["kind"] = r.apiVersion(), r.kind
			b, err := json.Marshal(m)
			if err != nil {
				return err
			}
			objs = append(objs, b)
		}
	}
	switch output {
	case "name":
		for _, o := range objs {
			var m metav1.PartialObjectMetadata
			if err := json.Unmarshal(o, &m); err != nil {
				return err
			}
			fmt.Fprintln(out, qualifiedName(r, m.Name))
		}
		return nil
	default:
		var doc []byte
		if len(objs) == 1 && len(names) == 1 {
			doc = objs[0]
		} else {
			list := map[string]any{"apiVersion": "v1", "kind": "List", "items": objs, "metadata": map[string]any{}}
			var err error
			if doc, err = json.Marshal(list); err != nil {
				return err
			}
		}
		if output == "yaml" {
			y, err := yaml.JSONToYAML(doc)
			if err != nil {
				return err
			}
			_, err = out.Write(y)
			return err
		}
		var v any
		if err := json.Unmarshal(doc, &v); err != nil {
			return err
		}
		b, err := json.MarshalIndent(v, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(b))
		return err
	}
}

// qualifiedName is how kubectl names an object: "pod/x",
// "deployment.apps/web".
func qualifiedName(r apiResource, name string) string {
	k := strings.ToLower(r.kind)
	if r.group != "" {
		k += "." + r.group
	}
	return k + "/" + name
}

// printTable writes t as aligned columns: those of priority 0, or all with
// wide, behind a NAMESPACE column when withNamespace.
func printTable(w io.Writer, t *metav1.Table, wide, withNamespace bool) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	var cols []int
	var header []string
	if withNamespace {
		header = append(header, "NAMESPACE")
	}
	for i, c := range t.ColumnDefinitions {
		if c.Priority == 0 || wide {
			cols = append(cols, i)
			header = append(header, strings.ToUpper(c.Name))
		}
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, row := range t.Rows {
		var cells []string
		if withNamespace {
			var m metav1.PartialObjectMetadata
			_ = json.Unmarshal(row.Object.Raw, &m)
			cells = append(cells, m.Namespace)
		}
		for _, i := range cols {
			if i < len(row.Cells) {
				cells = append(cells, cellString(row.Cells[i]))
			} else {
				cells = append(cells, "")
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func cellString(v any) string {
	switch v := v.(type) {
	case nil:
		return "<none>"
	case string:
		return v
	case float64:
		if v == float64(int64(v)) {
			return fmt.Sprintf("%d", int64(v))
		}
		return fmt.Sprint(v)
	default:
		return fmt.Sprint(v)
	}
}
