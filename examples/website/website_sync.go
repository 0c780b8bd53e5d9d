package website

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/controller/record"
)

const (
	// Finalizer holds a deleted Website until its Deployment is gone.
	Finalizer = "examples.kplane.dev/website-cleanup"
	// NameLabel on a Deployment and its pods names the Website they serve;
	// it is the Deployment's selector.
	NameLabel = "examples.kplane.dev/website"
	// ContainerName is the name of the one container of a site's pods.
	ContainerName = "web"
)

// Condition types.
const (
	// ConditionReady is True when every desired replica of the current
	// spec is ready.
	ConditionReady = "Ready"
	// ConditionProgressing is True while the Deployment is catching up
	// with the spec.
	ConditionProgressing = "Progressing"
)

// Event and condition reasons.
const (
	ReasonCreated         = "DeploymentCreated"
	ReasonUpdated         = "DeploymentUpdated"
	ReasonDeleting        = "DeletingDeployment"
	ReasonCleanedUp       = "CleanedUp"
	ReasonResourceExists  = "ErrResourceExists"
	ReasonReplicasReady   = "ReplicasReady"
	ReasonReplicasPending = "ReplicasNotReady"
	ReasonRollingOut      = "RollingOut"
	ReasonRolledOut       = "RolloutComplete"
	messageResourceExists = "Deployment %q already exists and is not managed by this Website"
)

// api is the part of the API server the sync writes through and reads
// without the cache.
type api interface {
	CreateDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error)
	UpdateDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error)
	// DeleteDeployment deletes namespace/name only if its uid is still uid.
	DeleteDeployment(ctx context.Context, namespace, name string, uid types.UID) error
	// GetDeployment reads a Deployment from the server, not the cache.
	GetDeployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error)
	// UpdateWebsite writes metadata and spec (finalizers here).
	UpdateWebsite(ctx context.Context, w *Website) (*Website, error)
	// UpdateWebsiteStatus writes the status subresource.
	UpdateWebsiteStatus(ctx context.Context, w *Website) (*Website, error)
}

// eventRecorder is the part of record.Recorder the sync uses.
type eventRecorder interface {
	Event(obj record.Object, eventType, reason, message string)
	Eventf(obj record.Object, eventType, reason, format string, args ...any)
}

// syncer holds what the reconcile logic reads and writes.
type syncer struct {
	websites    *cache.Lister[*Website]
	deployments *cache.Lister[*appsv1.Deployment]
	api         api
	recorder    eventRecorder
	// clock stamps the conditions' lastTransitionTime.
	clock clock.PassiveClock
}

// sync makes the Deployment of the Website named by key match it, and the
// Website's status match the Deployment.
func (s *syncer) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitObjectKey(key)
	if err != nil {
		// A key we did not make: retrying cannot help.
		return controller.Terminal(err)
	}
	site, err := s.websites.Namespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		// Gone: the finalizer made sure its Deployment went first.
		return nil
	}
	if err != nil {
		return err
	}
	if site.DeletionTimestamp != nil {
		return s.finalize(ctx, site)
	}
	if !slices.Contains(site.Finalizers, Finalizer) {
		// The finalizer goes on before anything is created, so nothing
		// of ours can outlive the Website unnoticed.
		withFinalizer := site.DeepCopy()
		withFinalizer.Finalizers = append(withFinalizer.Finalizers, Finalizer)
		if site, err = s.api.UpdateWebsite(ctx, withFinalizer); err != nil {
			return err
		}
	}

	d, err := s.deployments.Namespace(namespace).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		d, err = s.api.CreateDeployment(ctx, newDeployment(site))
		if apierrors.IsAlreadyExists(err) {
			// Our cache is behind: the informer will bring the
			// Deployment, and with it this key.
			return nil
		}
		if err != nil {
			return err
		}
		s.recorder.Eventf(site, corev1.EventTypeNormal, ReasonCreated, "Created Deployment %q", d.Name)
	case err != nil:
		return err
	default:
		if ref := metav1.GetControllerOf(d); ref == nil || ref.UID != site.UID {
			// Someone else's Deployment: never touch it. A change to
			// either object brings the key back.
			s.recorder.Eventf(site, corev1.EventTypeWarning, ReasonResourceExists, messageResourceExists, d.Name)
			return controller.Terminal(fmt.Errorf("deployment %q exists and is not managed by this website", d.Name))
		}
		if !upToDate(d, site) {
			if d, err = s.api.UpdateDeployment(ctx, desiredDeployment(d, site)); err != nil {
				return err
			}
			s.recorder.Eventf(site, corev1.EventTypeNormal, ReasonUpdated, "Updated Deployment %q", d.Name)
		}
	}
	return s.updateStatus(ctx, site, d)
}

// finalize deletes the Deployment of a deleted Website and, once the
// server no longer has it, removes the finalizer.
func (s *syncer) finalize(ctx context.Context, site *Website) error {
	if !slices.Contains(site.Finalizers, Finalizer) {
		return nil
	}
	// The cache may not have seen a Deployment created moments ago, so
	// only the server is trusted to say it is gone.
	d, err := s.api.GetDeployment(ctx, site.Namespace, site.Name)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	default:
		if ref := metav1.GetControllerOf(d); ref != nil && ref.UID == site.UID {
			if d.DeletionTimestamp == nil {
				err := s.api.DeleteDeployment(ctx, d.Namespace, d.Name, d.UID)
				switch {
				case err == nil:
					s.recorder.Eventf(site, corev1.EventTypeNormal, ReasonDeleting, "Deleting Deployment %q", d.Name)
				case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
					// Gone, or replaced since we read it: either way
					// its deletion event brings this key back.
				default:
					return err
				}
			}
			// Its deletion event brings this key back.
			return nil
		}
		// Not ours (any more): nothing to clean up.
	}
	done := site.DeepCopy()
	done.Finalizers = slices.DeleteFunc(done.Finalizers, func(f string) bool { return f == Finalizer })
	if _, err := s.api.UpdateWebsite(ctx, done); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	s.recorder.Event(site, corev1.EventTypeNormal, ReasonCleanedUp, "Deployment deleted, finalizer removed")
	return nil
}

// updateStatus writes the status d implies, if it differs from site's.
func (s *syncer) updateStatus(ctx context.Context, site *Website, d *appsv1.Deployment) error {
	status := s.statusFor(site, d)
	if equality.Semantic.DeepEqual(status, site.Status) {
		return nil
	}
	withStatus := site.DeepCopy()
	withStatus.Status = status
	_, err := s.api.UpdateWebsiteStatus(ctx, withStatus)
	return err
}

// statusFor is site's status given its Deployment d. Conditions whose
// status does not change keep their lastTransitionTime.
func (s *syncer) statusFor(site *Website, d *appsv1.Deployment) WebsiteStatus {
	want := replicasOf(site)
	ready := d.Status.ReadyReplicas
	// The Deployment's status describes the current spec only once its
	// controller has observed it and rolled every replica to it.
	current := d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas >= want && d.Status.Replicas == d.Status.UpdatedReplicas
	if want == 0 {
		current = d.Status.ObservedGeneration >= d.Generation && d.Status.Replicas == 0
	}
	isReady := current && ready >= want

	status := site.DeepCopy().Status
	status.ObservedGeneration = site.Generation
	status.ReadyReplicas = ready
	now := metav1.NewTime(s.clock.Now())
	readyCond := metav1.Condition{
		Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonReplicasPending,
		Message: fmt.Sprintf("%d of %d replicas ready", ready, want), ObservedGeneration: site.Generation, LastTransitionTime: now,
	}
	progressing := metav1.Condition{
		Type: ConditionProgressing, Status: metav1.ConditionTrue, Reason: ReasonRollingOut,
		Message: fmt.Sprintf("Deployment %q is rolling out", d.Name), ObservedGeneration: site.Generation, LastTransitionTime: now,
	}
	if isReady {
		readyCond.Status, readyCond.Reason = metav1.ConditionTrue, ReasonReplicasReady
		progressing.Status, progressing.Reason = metav1.ConditionFalse, ReasonRolledOut
		progressing.Message = fmt.Sprintf("Deployment %q has rolled out", d.Name)
	}
	meta.SetStatusCondition(&status.Conditions, readyCond)
	meta.SetStatusCondition(&status.Conditions, progressing)
	return status
}

// selectorLabels are the labels of a site's pods, its Deployment's selector.
func selectorLabels(site *Website) map[string]string {
	return map[string]string{NameLabel: site.Name}
}

// newDeployment is the Deployment serving site, controlled by it.
func newDeployment(site *Website) *appsv1.Deployment {
	labels := map[string]string{
		NameLabel:                      site.Name,
		"app.kubernetes.io/name":       "website",
		"app.kubernetes.io/instance":   site.Name,
		"app.kubernetes.io/managed-by": Name,
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       site.Namespace,
			Name:            site.Name,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(site, websiteKind)},
		},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selectorLabels(site)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
			},
		},
	}
	return desiredDeployment(d, site)
}

// desiredDeployment is a copy of d with the fields the Website owns set
// from site: replicas, and the web container's image and port. Other
// fields, the server's defaults among them, are kept.
func desiredDeployment(d *appsv1.Deployment, site *Website) *appsv1.Deployment {
	out := d.DeepCopy()
	replicas := replicasOf(site)
	out.Spec.Replicas = &replicas
	containers := out.Spec.Template.Spec.Containers
	i := slices.IndexFunc(containers, func(c corev1.Container) bool { return c.Name == ContainerName })
	if i < 0 {
		containers = append(containers, corev1.Container{Name: ContainerName})
		i = len(containers) - 1
	}
	c := &containers[i]
	c.Image = site.Spec.Image
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != portOf(site) {
		c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: portOf(site), Protocol: corev1.ProtocolTCP}}
	}
	out.Spec.Template.Spec.Containers = containers
	return out
}

// upToDate reports whether d already has what site asks for.
func upToDate(d *appsv1.Deployment, site *Website) bool {
	if d.Spec.Replicas == nil || *d.Spec.Replicas != replicasOf(site) {
		return false
	}
	i := slices.IndexFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == ContainerName })
	if i < 0 {
		return false
	}
	c := d.Spec.Template.Spec.Containers[i]
	return c.Image == site.Spec.Image && len(c.Ports) == 1 && c.Ports[0].ContainerPort == portOf(site)
}
