package history

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
)

// updateRetries is how many times a conflicting revision update is retried
// on a fresh read.
const updateRetries = 5

// RevisionClient writes ControllerRevisions. Errors are
// *apierrors.StatusError values as the API server returns them.
// ClientFor adapts a *client.Client.
type RevisionClient interface {
	CreateRevision(ctx context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error)
	GetRevision(ctx context.Context, namespace, name string) (*appsv1.ControllerRevision, error)
	UpdateRevision(ctx context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error)
	// DeleteRevision deletes namespace/name only if its uid is still uid.
	DeleteRevision(ctx context.Context, namespace, name string, uid types.UID) error
	PatchRevision(ctx context.Context, namespace, name string, pt types.PatchType, data []byte) (*appsv1.ControllerRevision, error)
}

// Config configures New.
type Config struct {
	// Lister reads revisions from a shared informer's cache. Required.
	Lister *cache.Lister[*appsv1.ControllerRevision]
	// Client writes revisions. Required.
	Client RevisionClient
}

// History reads and writes the ControllerRevisions of parents. It is safe
// for concurrent use.
type History struct {
	lister *cache.Lister[*appsv1.ControllerRevision]
	client RevisionClient
}

// New returns a History over cfg's lister and client.
func New(cfg Config) (*History, error) {
	switch {
	case cfg.Lister == nil:
		return nil, errors.New("history: lister is required")
	case cfg.Client == nil:
		return nil, errors.New("history: client is required")
	}
	return &History{lister: cfg.Lister, client: cfg.Client}, nil
}

// List returns the revisions in parent's namespace that selector matches
// and that parent controls or nobody controls, from the cache, in no
// particular order. The returned objects are the cache's: do not modify
// them.
func (h *History) List(parent metav1.Object, selector labels.Selector) ([]*appsv1.ControllerRevision, error) {
	all, err := h.lister.Namespace(parent.GetNamespace()).List(selector)
	if err != nil {
		return nil, fmt.Errorf("list revisions of %s: %w", parent.GetName(), err)
	}
	var out []*appsv1.ControllerRevision
	for _, r := range all {
		ref := metav1.GetControllerOf(r)
		if ref == nil || ref.UID == parent.GetUID() {
			out = append(out, r)
		}
	}
	return out, nil
}

// Create creates revision for parent under the name its data and
// *collisionCount hash to. When a revision of that name exists with the
// same data, that revision is returned; when it holds other data (a hash
// collision), *collisionCount is incremented and the create retried under
// the next name. The caller persists *collisionCount.
func (h *History) Create(ctx context.Context, parent metav1.Object, revision *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	if collisionCount == nil {
		return nil, errors.New("history: collision count must not be nil")
	}
	clone := revision.DeepCopy()
	clone.Namespace = parent.GetNamespace()
	if clone.Labels == nil {
		clone.Labels = map[string]string{}
	}
	for {
		hash := Hash(revision, collisionCount)
		clone.Name = Name(parent.GetName(), hash)
		clone.Labels[HashLabel] = hash
		created, err := h.client.CreateRevision(ctx, clone)
		if err == nil {
			return created, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create revision %s/%s: %w", clone.Namespace, clone.Name, err)
		}
		existing, err := h.client.GetRevision(ctx, clone.Namespace, clone.Name)
		if err != nil {
			return nil, fmt.Errorf("read existing revision %s/%s: %w", clone.Namespace, clone.Name, err)
		}
		if bytes.Equal(existing.Data.Raw, clone.Data.Raw) {
			return existing, nil
		}
		*collisionCount++
	}
}

// Update sets the revision number of revision to newRevision, retrying a
// conflict on a fresh read; it writes nothing when the number is already
// newRevision.
func (h *History) Update(ctx context.Context, revision *appsv1.ControllerRevision, newRevision int64) (*appsv1.ControllerRevision, error) {
	clone := revision.DeepCopy()
	for attempt := 0; ; attempt++ {
		if clone.Revision == newRevision {
			return clone, nil
		}
		clone.Revision = newRevision
		updated, err := h.client.UpdateRevision(ctx, clone)
		if err == nil {
			return updated, nil
		}
		if !apierrors.IsConflict(err) || attempt >= updateRetries {
			return nil, fmt.Errorf("update revision %s/%s: %w", clone.Namespace, clone.Name, err)
		}
		fresh, gerr := h.client.GetRevision(ctx, clone.Namespace, clone.Name)
		if gerr != nil {
			return nil, fmt.Errorf("update revision %s/%s: %w", clone.Namespace, clone.Name, errors.Join(err, gerr))
		}
		clone = fresh.DeepCopy()
	}
}

// Delete deletes revision; one already gone counts as deleted.
func (h *History) Delete(ctx context.Context, revision *appsv1.ControllerRevision) error {
	err := h.client.DeleteRevision(ctx, revision.Namespace, revision.Name, revision.UID)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete revision %s/%s: %w", revision.Namespace, revision.Name, err)
	}
	return nil
}

// Adopt makes parent, of kind parentKind, the controller of the orphan
// revision by a strategic merge patch guarded by the revision's uid. A
// revision another object controls is an error.
func (h *History) Adopt(ctx context.Context, parent metav1.Object, parentKind schema.GroupVersionKind, revision *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	if ref := metav1.GetControllerOf(revision); ref != nil {
		return nil, fmt.Errorf("history: can not adopt revision %s/%s controlled by %s %s", revision.Namespace, revision.Name, ref.Kind, ref.Name)
	}
	data, err := json.Marshal(ownerPatch[metav1.OwnerReference]{Metadata: ownerPatchMeta[metav1.OwnerReference]{
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(parent, parentKind)},
		UID:             revision.UID,
	}})
	if err != nil {
		return nil, err
	}
	out, err := h.client.PatchRevision(ctx, revision.Namespace, revision.Name, types.StrategicMergePatchType, data)
	if err != nil {
		return nil, fmt.Errorf("adopt revision %s/%s: %w", revision.Namespace, revision.Name, err)
	}
	return out, nil
}

// Release removes parent's owner reference from revision by a strategic
// merge patch guarded by the revision's uid. A revision gone or replaced
// (NotFound, Conflict, Invalid) counts as released and yields nil.
func (h *History) Release(ctx context.Context, parent metav1.Object, revision *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	data, err := json.Marshal(ownerPatch[map[string]string]{Metadata: ownerPatchMeta[map[string]string]{
		OwnerReferences: []map[string]string{{"$patch": "delete", "uid": string(parent.GetUID())}},
		UID:             revision.UID,
	}})
	if err != nil {
		return nil, err
	}
	out, err := h.client.PatchRevision(ctx, revision.Namespace, revision.Name, types.StrategicMergePatchType, data)
	switch {
	case err == nil:
		return out, nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err), apierrors.IsInvalid(err):
		return nil, nil
	default:
		return nil, fmt.Errorf("release revision %s/%s: %w", revision.Namespace, revision.Name, err)
	}
}

type ownerPatchMeta[R any] struct {
	OwnerReferences []R       `json:"ownerReferences"`
	UID             types.UID `json:"uid"`
}

type ownerPatch[R any] struct {
	Metadata ownerPatchMeta[R] `json:"metadata"`
}

// ClientFor returns a RevisionClient writing through c.
func ClientFor(c *client.Client) RevisionClient {
	return revisionClient{client.NewResource(c, client.ControllerRevisions)}
}

type revisionClient struct {
	rc *client.ResourceClient[*appsv1.ControllerRevision]
}

func (r revisionClient) CreateRevision(ctx context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	return r.rc.Namespace(rev.Namespace).Create(ctx, rev, metav1.CreateOptions{})
}

func (r revisionClient) GetRevision(ctx context.Context, namespace, name string) (*appsv1.ControllerRevision, error) {
	return r.rc.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (r revisionClient) UpdateRevision(ctx context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	return r.rc.Namespace(rev.Namespace).Update(ctx, rev, metav1.UpdateOptions{})
}

func (r revisionClient) DeleteRevision(ctx context.Context, namespace, name string, uid types.UID) error {
	opts := metav1.DeleteOptions{}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	return r.rc.Namespace(namespace).Delete(ctx, name, opts)
}

func (r revisionClient) PatchRevision(ctx context.Context, namespace, name string, pt types.PatchType, data []byte) (*appsv1.ControllerRevision, error) {
	return r.rc.Namespace(namespace).Patch(ctx, name, pt, data, metav1.PatchOptions{})
}
