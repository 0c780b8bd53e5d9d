package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/spf13/cobra"

	"github.com/kplane/kplane/pkg/client"
)

const (
	revisionAnnotation    = "deployment.kubernetes.io/revision"
	changeCauseAnnotation = "kubernetes.io/change-cause"
)

func newRolloutCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Follow, list and undo the rollouts of a Deployment",
	}
	cmd.AddCommand(newRolloutStatusCommand(), newRolloutHistoryCommand(), newRolloutUndoCommand())
	return cmd
}

// deploymentArg resolves "deployment/NAME" or "deployment NAME": rollout
// works on Deployments alone, so no discovery is needed.
func deploymentArg(args []string) (string, error) {
	typ, names, err := splitArgs(args)
	if err != nil {
		return "", err
	}
	switch strings.ToLower(typ) {
	case "deployment", "deployments", "deploy", "deployment.apps", "deployments.apps":
	default:
		return "", fmt.Errorf("rollout works on deployments, not %s", typ)
	}
	if len(names) != 1 {
		return "", errors.New("name exactly one deployment")
	}
	return names[0], nil
}

func newRolloutStatusCommand() *cobra.Command {
	o := &cliOptions{}
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:     "status deployment/NAME",
		Short:   "Wait until a Deployment's rollout finishes",
		Example: "  kplane rollout status deployment/web --timeout=1m",
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := deploymentArg(args)
			if err != nil {
				return err
			}
			c, ns, err := o.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			return rolloutStatus(ctx, c, ns, name, func(s string) { fmt.Fprintln(cmd.OutOrStdout(), s) })
		},
	}
	o.addFlags(cmd, false)
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long; 0 waits forever")
	return cmd
}

// rolloutStatus prints the rollout's progress until it completes, fails
// its progress deadline, or ctx ends.
func rolloutStatus(ctx context.Context, c *client.Client, ns, name string, out func(string)) error {
	deployments := client.NewResource(c, client.Deployments).Namespace(ns)
	last := ""
	for {
		d, err := deployments.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		msg, done, err := deploymentStatus(d)
		if err != nil {
			return err
		}
		if msg != last {
			out(msg)
			last = msg
		}
		if done {
			return nil
		}
		w, err := deployments.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: d.ResourceVersion})
		if err != nil {
			return err
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				w.Stop()
				return fmt.Errorf("deployment %q was deleted", name)
			}
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			msg, done, err := deploymentStatus(ev.Object)
			if msg != last && err == nil {
				out(msg)
				last = msg
			}
			if done || err != nil {
				w.Stop()
				return err
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return fmt.Errorf("timed out waiting for the rollout of deployment %q: %w", name, context.Cause(ctx))
		}
		// The watch ended (server timeout): read again and resume.
	}
}

// deploymentStatus words a Deployment's rollout state as kubectl does and
// tells whether it is complete.
func deploymentStatus(d *appsv1.Deployment) (string, bool, error) {
	if d.Generation > d.Status.ObservedGeneration {
		return "Waiting for deployment spec update to be observed...", false, nil
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
			return "", false, fmt.Errorf("deployment %q exceeded its progress deadline", d.Name)
		}
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	switch {
	case s.UpdatedReplicas < want:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d out of %d new replicas have been updated...", d.Name, s.UpdatedReplicas, want), false, nil
	case s.Replicas > s.UpdatedReplicas:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d old replicas are pending termination...", d.Name, s.Replicas-s.UpdatedReplicas), false, nil
	case s.AvailableReplicas < s.UpdatedReplicas:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d of %d updated replicas are available...", d.Name, s.AvailableReplicas, s.UpdatedReplicas), false, nil
	}
	return fmt.Sprintf("deployment %q successfully rolled out", d.Name), true, nil
}

// revisions returns the ReplicaSets d controls, by revision.
func revisions(ctx context.Context, c *client.Client, d *appsv1.Deployment) (map[int64]*appsv1.ReplicaSet, error) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %q: %w", d.Name, err)
	}
	list, err := client.NewResource(c, client.ReplicaSets).Namespace(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	out := map[int64]*appsv1.ReplicaSet{}
	for _, rs := range list.Items {
		if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != d.UID {
			continue
		}
		rev, err := strconv.ParseInt(rs.Annotations[revisionAnnotation], 10, 64)
		if err != nil {
			continue
		}
		out[rev] = rs
	}
	return out, nil
}

func newRolloutHistoryCommand() *cobra.Command {
	o := &cliOptions{}
	cmd := &cobra.Command{
		Use:   "history deployment/NAME",
		Short: "List a Deployment's revisions",
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := deploymentArg(args)
			if err != nil {
				return err
			}
			c, ns, err := o.client()
			if err != nil {
				return err
			}
			d, err := client.NewResource(c, client.Deployments).Namespace(ns).Get(cmd.Context(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			revs, err := revisions(cmd.Context(), c, d)
			if err != nil {
				return err
			}
			keys := make([]int64, 0, len(revs))
			for k := range revs {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			fmt.Fprintf(cmd.OutOrStdout(), "deployment.apps/%s\n", name)
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "REVISION\tCHANGE-CAUSE")
			for _, k := range keys {
				cause := revs[k].Annotations[changeCauseAnnotation]
				if cause == "" {
					cause = "<none>"
				}
				fmt.Fprintf(tw, "%d\t%s\n", k, cause)
			}
			return tw.Flush()
		},
	}
	o.addFlags(cmd, false)
	return cmd
}

func newRolloutUndoCommand() *cobra.Command {
	o := &cliOptions{}
	var toRevision int64
	cmd := &cobra.Command{
		Use:     "undo deployment/NAME [--to-revision=N]",
		Short:   "Roll a Deployment back to an earlier revision",
		Example: "  kplane rollout undo deployment/web\n  kplane rollout undo deployment/web --to-revision=1",
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := deploymentArg(args)
			if err != nil {
				return err
			}
			if toRevision < 0 {
				return fmt.Errorf("--to-revision must not be negative")
			}
			c, ns, err := o.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			deployments := client.NewResource(c, client.Deployments).Namespace(ns)
			d, err := deployments.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if d.Spec.Paused {
				return fmt.Errorf("you cannot rollback a paused deployment; resume it first")
			}
			revs, err := revisions(ctx, c, d)
			if err != nil {
				return err
			}
			target, err := undoTarget(revs, toRevision)
			if err != nil {
				return err
			}
			tmpl := target.Spec.Template.DeepCopy()
			delete(tmpl.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
			if equalTemplates(tmpl, &d.Spec.Template) {
				fmt.Fprintf(cmd.OutOrStdout(), "deployment.apps/%s skipped rollback (current template already matches revision %s)\n", name, target.Annotations[revisionAnnotation])
				return nil
			}
			patch, err := json.Marshal([]map[string]any{
				{"op": "test", "path": "/metadata/resourceVersion", "value": d.ResourceVersion},
				{"op": "replace", "path": "/spec/template", "value": tmpl},
			})
			if err != nil {
				return err
			}
			if _, err := deployments.Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deployment.apps/%s rolled back\n", name)
			return nil
		},
	}
	o.addFlags(cmd, false)
	cmd.Flags().Int64Var(&toRevision, "to-revision", 0, "the revision to roll back to; 0 is the one before the current")
	return cmd
}

// undoTarget picks the ReplicaSet of revision to, or with to 0 the one of
// the highest revision below the current (highest) one.
func undoTarget(revs map[int64]*appsv1.ReplicaSet, to int64) (*appsv1.ReplicaSet, error) {
	if to > 0 {
		rs, ok := revs[to]
		if !ok {
			return nil, fmt.Errorf("unable to find the specified revision %d", to)
		}
		return rs, nil
	}
	keys := make([]int64, 0, len(revs))
	for k := range revs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) < 2 {
		return nil, errors.New("no rollout history found: there is no previous revision to roll back to")
	}
	return revs[keys[len(keys)-2]], nil
}

// equalTemplates compares pod templates by their JSON.
func equalTemplates(a, b *corev1.PodTemplateSpec) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}
