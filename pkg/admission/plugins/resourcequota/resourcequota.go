package resourcequota

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/admission"
)

// quotasGVR is the resource the plugin reads and charges.
var quotasGVR = corev1.SchemeGroupVersion.WithResource("resourcequotas")

const (
	// retries is how many times a charge that lost a race for a quota's
	// resourceVersion is decided again on the stored quota, as Kubernetes
	// does.
	retries = 3
	// stripes is the number of locks namespaces hash to: requests of one
	// namespace are decided one at a time in this server.
	stripes = 64
	// maxWritten bounds the quotas remembered as written but not yet seen
	// by the cache; past it one is forgotten (a later request then loses a
	// conflict and retries).
	maxWritten = 1024
)

// Plugin is the ResourceQuota admission plugin. It is safe for concurrent
// use.
type Plugin struct {
	src   admission.Source
	clock clock.PassiveClock
	locks [stripes]sync.Mutex

	mu sync.Mutex
	// written holds, by namespace/name, the quotas this plugin stored
	// whose resourceVersion is newer than the cache's: decisions use them
	// rather than the cache's older copy. Entries go when the cache has
	// caught up.
	written map[string]*corev1.ResourceQuota
}

var _ admission.ValidationInterface = (*Plugin)(nil)

// New builds the plugin from cfg: cfg.Source is required; cfg.Clock
// (default the real clock) decides when a pod stuck terminating stops
// being charged.
func New(cfg *admission.Config) (admission.Interface, error) {
	if cfg == nil || cfg.Source == nil {
		return nil, errors.New("resourcequota: a source is required")
	}
	var c clock.PassiveClock = clock.RealClock{}
	if cfg.Clock != nil {
		c = cfg.Clock
	}
	return &Plugin{src: cfg.Source, clock: c, written: map[string]*corev1.ResourceQuota{}}, nil
}

// Handles reports true for CREATE and UPDATE: deletes are not charged,
// the controller gives their usage back.
func (p *Plugin) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Update
}

// Validate refuses the request when it would take a namespace's quota
// past its hard limits, and otherwise charges it: every quota it uses has
// its status.used written before Validate returns (not for dry runs), so
// the object stored afterwards is already paid for.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	ev, ok := evaluatorFor(a)
	if !ok {
		return nil
	}
	lock := &p.locks[stripe(a.Namespace)]
	lock.Lock()
	defer lock.Unlock()

	quotas, err := p.quotas(ctx, a.Namespace)
	if err != nil {
		return err
	}
	for attempt := 0; len(quotas) > 0; attempt++ {
		next, err := check(quotas, a, ev, p.clock.Now())
		if err != nil || a.DryRun || len(next) == 0 {
			return err
		}
		var failed []string
		var lastErr error
		for _, i := range sortedKeys(next) {
			q := quotas[i].DeepCopy()
			q.Status.Used = next[i]
			stored, err := p.src.UpdateStatus(ctx, quotasGVR, q)
			if err != nil {
				if !apierrors.IsConflict(err) {
					return asStatus(err)
				}
				failed = append(failed, q.Name)
				lastErr = err
				continue
			}
			if sq, ok := stored.(*corev1.ResourceQuota); ok {
				p.remember(sq)
			}
		}
		if len(failed) == 0 {
			return nil
		}
		if attempt >= retries {
			return lastErr
		}
		// Decide again on the stored state of the quotas that moved; the
		// others are charged already.
		quotas = quotas[:0]
		for _, name := range failed {
			obj, err := p.src.Fetch(ctx, quotasGVR, a.Namespace, name)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return asStatus(err)
			}
			q, ok := obj.(*corev1.ResourceQuota)
			if !ok {
				return apierrors.NewInternalError(fmt.Errorf("resourcequota: fetched %T", obj))
			}
			quotas = append(quotas, q)
		}
	}
	return nil
}

// quotas returns namespace's quotas sorted by name, each the newer of the
// cache's and the one this plugin last wrote.
func (p *Plugin) quotas(ctx context.Context, namespace string) ([]*corev1.ResourceQuota, error) {
	objs, _, err := p.src.List(ctx, quotasGVR, namespace)
	if err != nil {
		return nil, asStatus(fmt.Errorf("error resolving quota: %w", err))
	}
	out := make([]*corev1.ResourceQuota, 0, len(objs))
	p.mu.Lock()
	for _, obj := range objs {
		q, ok := obj.(*corev1.ResourceQuota)
		if !ok {
			continue
		}
		key := q.Namespace + "/" + q.Name
		if w, ok := p.written[key]; ok {
			if newer(w, q) {
				q = w
			} else {
				delete(p.written, key)
			}
		}
		out = append(out, q)
	}
	p.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// remember keeps q, just stored, for decisions until the cache has it.
func (p *Plugin) remember(q *corev1.ResourceQuota) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.written) >= maxWritten {
		for k := range p.written {
			delete(p.written, k)
			break
		}
	}
	p.written[q.Namespace+"/"+q.Name] = q
}

// newer reports whether a's resourceVersion is later than b's, both the
// same object's; versions that are not integers are never newer.
func newer(a, b *corev1.ResourceQuota) bool {
	if a.UID != b.UID {
		return false
	}
	ra, err1 := strconv.ParseUint(a.ResourceVersion, 10, 64)
	rb, err2 := strconv.ParseUint(b.ResourceVersion, 10, 64)
	return err1 == nil && err2 == nil && ra > rb
}

func stripe(namespace string) int {
	h := fnv.New32a()
	h.Write([]byte(namespace))
	return int(h.Sum32() % stripes)
}

func sortedKeys(m map[int]corev1.ResourceList) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// asStatus keeps API errors and makes others an internal error: a failure
// to read or write quota is the server's, not a refusal.
func asStatus(err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	return apierrors.NewInternalError(err)
}
