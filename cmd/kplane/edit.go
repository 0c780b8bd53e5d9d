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
	var file string
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Create or update objects from a manifest",
		Long: `Create the objects of a YAML or JSON manifest (several documents allowed; "-"
reads stdin), or update those that exist with a strategic merge patch of the
manifest. Unlike kubectl's apply, fields removed from the manifest are kept on
the object.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return errors.New("-f is required")
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
				if err := applyObject(cmd, c, rs, ns, obj); err != nil {
					return fmt.Errorf("%s: document %d: %w", file, i, err)
				}
			}
		},
	}
	o.addFlags(cmd, false)
	cmd.Flags().StringVarP(&file, "filename", "f", "", "manifest file, or - for stdin")
	return cmd
}

func applyObject(cmd *cobra.Command, c *client.Client, rs *resources, defaultNS string, obj map[string]any) error {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if apiVersion == "" || kind == "" {
		return errors.New("apiVersion and kind are required")
	}
	r, err := rs.lookupKind(apiVersion, kind)
	if err != nil {
		return err
	}
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if name == "" {
		return errors.New("metadata.name is required")
	}
	ns := ""
	if r.namespaced {
		ns, _ = meta["namespace"].(string)
		if ns == "" {
			ns = defaultNS
		}
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	objPath := r.path(ns) + "/" + url.PathEscape(name)
	_, err = c.Do(ctx, client.Request{Path: objPath})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := c.Do(ctx, client.Request{Method: http.MethodPost, Path: r.path(ns), Query: url.Values{"fieldManager": {"kplane"}}, Body: body}); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s created\n", qualifiedName(r, name))
	case err != nil:
		return err
	default:
		if _, err := c.Do(ctx, client.Request{Method: http.MethodPatch, Path: objPath, Query: url.Values{"fieldManager": {"kplane"}},
			Header: http.Header{"Content-Type": {"application/strategic-merge-patch+json"}}, Body: body}); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s configured\n", qualifiedName(r, name))
	}
	return nil
}
