package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/spf13/cobra"

	"github.com/kplane/kplane/pkg/client"
)

func newDeleteCommand() *cobra.Command {
	o := &cliOptions{}
	var cascade string
	cmd := &cobra.Command{
		Use:     "delete TYPE[/NAME] [NAME...]",
		Short:   "Delete resources by name",
		Example: "  kplane delete deployment web\n  kplane delete pod/web-1 --cascade=orphan",
		RunE: func(cmd *cobra.Command, args []string) error {
			policy := map[string]metav1.DeletionPropagation{"background": metav1.DeletePropagationBackground,
				"foreground": metav1.DeletePropagationForeground, "orphan": metav1.DeletePropagationOrphan}[cascade]
			if policy == "" {
				return fmt.Errorf("--cascade must be background, foreground or orphan, not %q", cascade)
			}
			c, ns, rs, err := o.connect()
			if err != nil {
				return err
			}
			r, names, err := rs.splitTypeName(args)
			if err != nil {
				return err
			}
			if len(names) == 0 {
				return errors.New("name the objects to delete")
			}
			body, err := json.Marshal(metav1.DeleteOptions{
				TypeMeta:          metav1.TypeMeta{APIVersion: "v1", Kind: "DeleteOptions"},
				PropagationPolicy: &policy,
			})
			if err != nil {
				return err
			}
			var errs []error
			for _, n := range names {
				_, err := c.Do(cmd.Context(), client.Request{Method: http.MethodDelete, Path: r.path(ns) + "/" + url.PathEscape(n), Body: body})
				if err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %q deleted\n", qualifiedKind(r), n)
			}
			return errors.Join(errs...)
		},
	}
	o.addFlags(cmd, false)
	cmd.Flags().StringVar(&cascade, "cascade", "background", "what happens to dependents: background, foreground or orphan")
	return cmd
}

// qualifiedKind is "deployment.apps" or "pod".
func qualifiedKind(r apiResource) string {
	name := qualifiedName(r, "")
	return name[:len(name)-1]
}

func newScaleCommand() *cobra.Command {
	o := &cliOptions{}
	var replicas int
	cmd := &cobra.Command{
		Use:     "scale TYPE/NAME --replicas=N",
		Short:   "Set the replicas of a Deployment or ReplicaSet",
		Example: "  kplane scale deployment/web --replicas=5",
		RunE: func(cmd *cobra.Command, args []string) error {
			if replicas < 0 {
				return fmt.Errorf("--replicas must be set and not negative")
			}
			c, ns, rs, err := o.connect()
			if err != nil {
				return err
			}
			r, names, err := rs.splitTypeName(args)
			if err != nil {
				return err
			}
			if len(names) != 1 {
				return errors.New("name exactly one object to scale")
			}
			patch := []byte(`{"spec":{"replicas":` + strconv.Itoa(replicas) + `}}`)
			objPath := r.path(ns) + "/" + url.PathEscape(names[0])
			if _, err := c.Do(cmd.Context(), client.Request{Method: http.MethodPatch, Path: objPath + "/scale",
				Header: http.Header{"Content-Type": {"application/merge-patch+json"}}, Body: patch}); err != nil {
				if !apierrors.IsNotFound(err) {
					return err
				}
				// Either the object or its scale subresource is missing: say which.
				if _, getErr := c.Do(cmd.Context(), client.Request{Path: objPath}); getErr != nil {
					return getErr
				}
				return fmt.Errorf("%s cannot be scaled: they have no scale subresource", r.resource)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s scaled\n", qualifiedName(r, names[0]))
			return nil
		},
	}
	o.addFlags(cmd, false)
	cmd.Flags().IntVar(&replicas, "replicas", -1, "the new number of replicas")
	return cmd
}

func newApplyCommand() *cobra.Command {
	o := &cliOptions{}
	var file, fieldManager, dryRun string
	var force bool
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Create or update objects from a manifest by server-side apply",
		Long: `Apply the objects of a YAML or JSON manifest (several documents allowed; "-"
reads stdin) by server-side apply, as kubectl apply --server-side does: the
server creates each object that does not exist, merges the manifest into those
that do, and records the manifest's fields as owned by the field manager
("kplane", or --field-manager). A field the manager applied before and the
manifest no longer has is removed from the object, unless another manager
owns it too.

Changing a field that another manager owns is a conflict: the apply fails and
names the fields and their managers. --force-conflicts takes them over.
--dry-run=server has the server do everything but store the result.`,
		Example: "  kplane apply -f app.yaml\n  kplane apply -f - --field-manager=ci --force-conflicts < app.yaml",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return errors.New("-f is required")
			}
			if fieldManager == "" {
				return errors.New("--field-manager may not be empty")
			}
			opts := client.ApplyOptions{FieldManager: fieldManager, Force: force}
			switch dryRun {
			case "none":
			case "server":
				opts.DryRun = true
			case "client":
				return errors.New("--dry-run=client is not supported by server-side apply: use --dry-run=server")
			default:
				return fmt.Errorf("--dry-run must be none or server, not %q", dryRun)
			}
			var data []byte
			var err error
			if file == "-" {
				data, err = io.ReadAll(cmd.InOrStdin())
			} else {
				data, err = os.ReadFile(file)
			}
			if err != nil {
				return err
			}
			c, ns, rs, err := o.connect()
			if err != nil {
				return err
			}
			dyn := client.NewDynamic(c)
			dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
			for i := 1; ; i++ {
				var obj map[string]any
				if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
					return nil
				} else if err != nil {
					return fmt.Errorf("%s: document %d: %w", file, i, err)
				}
				if len(obj) == 0 {
					continue
				}
				if err := applyObject(cmd, dyn, rs, ns, obj, opts); err != nil {
					return fmt.Errorf("%s: document %d: %w", file, i, err)
				}
			}
		},
	}
	o.addFlags(cmd, false)
	f := cmd.Flags()
	f.StringVarP(&file, "filename", "f", "", "manifest file, or - for stdin")
	f.StringVar(&fieldManager, "field-manager", "kplane", "the name of the manager that owns the applied fields")
	f.BoolVar(&force, "force-conflicts", false, "take over the fields that other managers own instead of failing")
	f.StringVar(&dryRun, "dry-run", "none", `"server" sends the apply without storing its result; "none" applies`)
	return cmd
}

// conflictHelp follows a conflict, in the words of kubectl apply
// --server-side, so that what to do next reads the same.
const conflictHelp = `Please review the fields above--they currently have other managers. Here
are the ways you can resolve this warning:
* If you intend to manage all of these fields, please re-run the apply
  command with the ` + "`--force-conflicts`" + ` flag.
* If you do not intend to manage all of the fields, please edit your
  manifest to remove references to the fields that should keep their
  current managers.
* You may co-own fields by updating your manifest to match the existing
  value; in this case, you'll become the manager if the other manager(s)
  stop managing the field (remove it from their configuration).
See https://kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts`

// applyObject server-side applies obj and prints what kubectl apply
// --server-side prints: "<kind>/<name> serverside-applied".
func applyObject(cmd *cobra.Command, dyn *client.DynamicClient, rs *resources, defaultNS string, obj map[string]any, opts client.ApplyOptions) error {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if apiVersion == "" || kind == "" {
		return errors.New("apiVersion and kind are required")
	}
	r, err := rs.lookupKind(apiVersion, kind)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: obj}
	name := u.GetName()
	if name == "" {
		return errors.New("metadata.name is required")
	}
	ns := ""
	if r.namespaced {
		ns = u.GetNamespace()
		if ns == "" {
			ns = defaultNS
		}
	} else if u.GetNamespace() != "" {
		// The server ignores the namespace of a cluster-scoped object.
		u = u.DeepCopy()
		unstructured.RemoveNestedField(u.Object, "metadata", "namespace")
	}
	gvr := schema.GroupVersionResource{Group: r.group, Version: r.version, Resource: r.resource}
	if _, err := dyn.Resource(gvr).Namespace(ns).Apply(cmd.Context(), u, opts); err != nil {
		if apierrors.IsConflict(err) && !opts.Force {
			return fmt.Errorf("%w\n%s", err, conflictHelp)
		}
		return err
	}
	suffix := ""
	if opts.DryRun {
		suffix = " (server dry run)"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s serverside-applied%s\n", qualifiedName(r, name), suffix)
	return nil
}
