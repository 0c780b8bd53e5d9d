package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kplane/kplane/pkg/client"
)

// dump writes every object the server holds to the test log, one YAML
// document per object, resource by resource.
func (e *Env) dump() {
	ctx, cancel := context.WithTimeout(context.Background(), dumpTimeout)
	defer cancel()
	var b strings.Builder
	n := 0
	for _, st := range e.resources {
		info := st.Info()
		resp, err := e.Client.Do(ctx, client.Request{Path: collectionPath(info, "")})
		if err != nil {
			fmt.Fprintf(&b, "# %s: list failed: %v\n", info.Resource, err)
			continue
		}
		var list struct {
			Items []map[string]any `json:"items"`
		}
		if err := json.Unmarshal(resp.Body, &list); err != nil {
			fmt.Fprintf(&b, "# %s: decode list: %v\n", info.Resource, err)
			continue
		}
		for _, item := range list.Items {
			// Items of a list carry no type; put it back for readers.
			item["apiVersion"] = info.GVK.GroupVersion().String()
			item["kind"] = info.GVK.Kind
			b.WriteString("---\n")
			b.WriteString(renderYAML(item))
			n++
		}
	}
	e.t.Logf("testenv: the test failed; the %d objects in the API server at teardown:\n%s", n, b.String())
}
