package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/client"
)

// apiResource is a resource the CLI commands know.
type apiResource struct {
	group, version, resource, kind string
	namespaced                     bool
	aliases                        []string
}

// path returns the collection path of r in namespace ns ("" is all).
func (r apiResource) path(ns string) string {
	if !r.namespaced {
		ns = ""
	}
	return client.CollectionPath(schema.GroupVersionResource{Group: r.group, Version: r.version, Resource: r.resource}, ns)
}

// apiVersion is r's apiVersion field value.
func (r apiResource) apiVersion() string {
	if r.group == "" {
		return r.version
	}
	return r.group + "/" + r.version
}

// builtinResources are the resources kplane serves.
var builtinResources = []apiResource{
	{"", "v1", "pods", "Pod", true, []string{"pod", "po"}},
	{"", "v1", "nodes", "Node", false, []string{"node", "no"}},
	{"", "v1", "namespaces", "Namespace", false, []string{"namespace", "ns"}},
	{"", "v1", "events", "Event", true, []string{"event", "ev"}},
	{"", "v1", "configmaps", "ConfigMap", true, []string{"configmap", "cm"}},
	{"", "v1", "secrets", "Secret", true, []string{"secret"}},
	{"apps", "v1", "deployments", "Deployment", true, []string{"deployment", "deploy"}},
	{"apps", "v1", "replicasets", "ReplicaSet", true, []string{"replicaset", "rs"}},
	{"coordination.k8s.io", "v1", "leases", "Lease", true, []string{"lease"}},
}

// lookupResource finds a resource by plural, singular, short name or
// kind, case-insensitively, optionally qualified by group
// ("deployments.apps").
func lookupResource(name string) (apiResource, error) {
	n := strings.ToLower(name)
	base, group, qualified := strings.Cut(n, ".")
	for _, r := range builtinResources {
		if qualified && group != r.group {
			continue
		}
		if base == r.resource || base == strings.ToLower(r.kind) || slices.Contains(r.aliases, base) {
			return r, nil
		}
	}
	var known []string
	for _, r := range builtinResources {
		known = append(known, r.resource)
	}
	return apiResource{}, fmt.Errorf("the server doesn't have a resource type %q (known: %s)", name, strings.Join(known, ", "))
}

// lookupKind finds a resource by apiVersion and kind.
func lookupKind(apiVersion, kind string) (apiResource, error) {
	for _, r := range builtinResources {
		if r.apiVersion() == apiVersion && r.kind == kind {
			return r, nil
		}
	}
	return apiResource{}, fmt.Errorf("no resource for kind %q in %q", kind, apiVersion)
}

// splitTypeName splits "type/name" or the pair "type name".
func splitTypeName(args []string) (apiResource, []string, error) {
	if len(args) == 0 {
		return apiResource{}, nil, fmt.Errorf("a resource type is required, such as pods or deployment/web")
	}
	typ, name, slash := strings.Cut(args[0], "/")
	r, err := lookupResource(typ)
	if err != nil {
		return apiResource{}, nil, err
	}
	names := args[1:]
	if slash {
		if name == "" || len(args) > 1 {
			return apiResource{}, nil, fmt.Errorf("use either TYPE/NAME or TYPE NAME..., not %q", strings.Join(args, " "))
		}
		names = []string{name}
	}
	return r, names, nil
}

// cliOptions are the connection flags of the CLI commands.
type cliOptions struct {
	kubeconfig    string
	context       string
	namespace     string
	allNamespaces bool
}

func (o *cliOptions) addFlags(cmd *cobra.Command, allNamespaces bool) {
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&o.context, "context", "", "kubeconfig context (default its current-context)")
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace (default the context's)")
	if allNamespaces {
		f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list across all namespaces")
	}
}

// client connects as the kubeconfig says and returns the namespace to use.
func (o *cliOptions) client() (*client.Client, string, error) {
	kc, err := client.LoadKubeconfig(client.KubeconfigOptions{Path: o.kubeconfig, Context: o.context})
	if err != nil {
		return nil, "", err
	}
	kc.Config.UserAgent = "kplane-cli"
	c, err := client.New(kc.Config)
	if err != nil {
		return nil, "", err
	}
	ns := o.namespace
	if ns == "" {
		ns = kc.Namespace
	}
	return c, ns, nil
}
