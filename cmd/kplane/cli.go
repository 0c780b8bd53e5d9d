package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/client"
)

// apiResource is a resource the CLI commands know.
type apiResource struct {
	group, version, resource, kind string
	namespaced                     bool
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

// resources finds the resources the server serves, built-in and custom,
// through its discovery documents.
type resources struct {
	mapper *client.RESTMapper
}

func newResources(c *client.Client) (*resources, error) {
	m, err := client.NewRESTMapper(client.RESTMapperConfig{Discovery: client.NewDiscovery(c)})
	if err != nil {
		return nil, err
	}
	return &resources{mapper: m}, nil
}

// lookup finds a resource by plural, singular or short name, or kind,
// case-insensitively, optionally qualified by group ("deployments.apps").
func (rs *resources) lookup(name string) (apiResource, error) {
	n := strings.ToLower(name)
	base, group, _ := strings.Cut(n, ".")
	gvr, err := rs.mapper.ResourceFor(schema.GroupVersionResource{Group: group, Resource: base})
	if meta.IsNoMatchError(err) {
		return apiResource{}, fmt.Errorf("the server doesn't have a resource type %q", name)
	}
	if err != nil {
		return apiResource{}, err
	}
	gvk, err := rs.mapper.KindFor(gvr)
	if err != nil {
		return apiResource{}, err
	}
	return rs.byKind(gvk)
}

// byKind finds the resource of apiVersion and kind.
func (rs *resources) byKind(gvk schema.GroupVersionKind) (apiResource, error) {
	m, err := rs.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return apiResource{}, fmt.Errorf("no resource for kind %q in %q", gvk.Kind, gvk.GroupVersion().String())
	}
	if err != nil {
		return apiResource{}, err
	}
	return apiResource{
		group: m.Resource.Group, version: m.Resource.Version, resource: m.Resource.Resource,
		kind: m.GroupVersionKind.Kind, namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace,
	}, nil
}

// lookupKind finds a resource by apiVersion and kind.
func (rs *resources) lookupKind(apiVersion, kind string) (apiResource, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return apiResource{}, err
	}
	return rs.byKind(gv.WithKind(kind))
}

// splitTypeName splits "type/name" or the pair "type name".
func (rs *resources) splitTypeName(args []string) (apiResource, []string, error) {
	typ, names, err := splitArgs(args)
	if err != nil {
		return apiResource{}, nil, err
	}
	r, err := rs.lookup(typ)
	if err != nil {
		return apiResource{}, nil, err
	}
	return r, names, nil
}

// splitArgs splits "type/name" or "type name..." into the type and names.
func splitArgs(args []string) (string, []string, error) {
	if len(args) == 0 {
		return "", nil, fmt.Errorf("a resource type is required, such as pods or deployment/web")
	}
	typ, name, slash := strings.Cut(args[0], "/")
	names := args[1:]
	if slash {
		if name == "" || len(args) > 1 {
			return "", nil, fmt.Errorf("use either TYPE/NAME or TYPE NAME..., not %q", strings.Join(args, " "))
		}
		names = []string{name}
	}
	return typ, names, nil
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

// connect is client, with the server's resources to resolve names by.
func (o *cliOptions) connect() (*client.Client, string, *resources, error) {
	c, ns, err := o.client()
	if err != nil {
		return nil, "", nil, err
	}
	rs, err := newResources(c)
	if err != nil {
		return nil, "", nil, err
	}
	return c, ns, rs, nil
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
