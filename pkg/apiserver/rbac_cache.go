package apiserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/authorization/rbac"
	"github.com/kplane/kplane/pkg/storage"
)

// rbacCache keeps the server's Roles, RoleBindings, ClusterRoles and
// ClusterRoleBindings in memory for the RBAC authorizer, following the
// stores with list and watch. Readers get immutable snapshots, replaced
// whole on every change, so lookups take no lock and allocate nothing;
// the objects in them are shared and never changed. Bindings are listed
// by name, so that the binding an allowed request is credited to does
// not vary from one request to the next.
type rbacCache struct {
	s *Server
	// res are the four RBAC resources, in the order of rbacResourceNames.
	res [4]*resource

	roles        atomic.Pointer[map[string]map[string]*rbacv1.Role]
	roleBindings atomic.Pointer[map[string][]*rbacv1.RoleBinding]
	clusterRoles atomic.Pointer[map[string]*rbacv1.ClusterRole]
	crbs         atomic.Pointer[[]*rbacv1.ClusterRoleBinding]

	// listed counts the resources listed once; synced is closed when all
	// four have been, isSynced set at the same time.
	listed     atomic.Int32
	syncedOnce sync.Once
	synced     chan struct{}
	isSynced   atomic.Bool

	// changedMu guards changed, closed and replaced after every publish,
	// so that waiters learn of each change.
	changedMu sync.Mutex
	changed   chan struct{}
}

var _ rbac.Lister = (*rbacCache)(nil)

var rbacResourceNames = [4]string{"roles", "rolebindings", "clusterroles", "clusterrolebindings"}

// newRBACCache returns the cache of s's RBAC resources; it needs all four
// served.
func newRBACCache(s *Server) (*rbacCache, error) {
	c := &rbacCache{s: s, synced: make(chan struct{}), changed: make(chan struct{})}
	for i, name := range rbacResourceNames {
		c.res[i] = s.lookup(rbacv1.SchemeGroupVersion.WithResource(name))
		if c.res[i] == nil {
			return nil, fmt.Errorf("apiserver: RBAC authorization needs %s, which are not served", name)
		}
	}
	c.roles.Store(&map[string]map[string]*rbacv1.Role{})
	c.roleBindings.Store(&map[string][]*rbacv1.RoleBinding{})
	c.clusterRoles.Store(&map[string]*rbacv1.ClusterRole{})
	c.crbs.Store(&[]*rbacv1.ClusterRoleBinding{})
	return c, nil
}

// Role returns the Role namespace/name.
func (c *rbacCache) Role(namespace, name string) (*rbacv1.Role, bool) {
	r, ok := (*c.roles.Load())[namespace][name]
	return r, ok
}

// RoleBindings returns the RoleBindings of namespace.
func (c *rbacCache) RoleBindings(namespace string) []*rbacv1.RoleBinding {
	return (*c.roleBindings.Load())[namespace]
}

// ClusterRole returns the ClusterRole name.
func (c *rbacCache) ClusterRole(name string) (*rbacv1.ClusterRole, bool) {
	r, ok := (*c.clusterRoles.Load())[name]
	return r, ok
}

// ClusterRoleBindings returns every ClusterRoleBinding.
func (c *rbacCache) ClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	return *c.crbs.Load()
}

// waitSynced blocks until every resource has been listed once, or ctx ends.
func (c *rbacCache) waitSynced(ctx context.Context) error {
	if c.isSynced.Load() {
		return nil
	}
	select {
	case <-c.synced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the RBAC policy cache has not synced: %w", ctx.Err())
	}
}

// changes returns a channel closed at the next change of the cache.
func (c *rbacCache) changes() <-chan struct{} {
	c.changedMu.Lock()
	defer c.changedMu.Unlock()
	return c.changed
}

func (c *rbacCache) notify() {
	c.changedMu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.changedMu.Unlock()
}

// run follows the four resources until ctx ends; it returns after its
// goroutines have.
func (c *rbacCache) run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range c.res {
		wg.Go(func() { c.follow(ctx, i) })
	}
	wg.Wait()
}

// follow lists and watches resource i, listing again after a failure.
func (c *rbacCache) follow(ctx context.Context, i int) {
	first := true
	for ctx.Err() == nil {
		err := c.listAndWatch(ctx, i, &first)
		if err != nil && ctx.Err() == nil {
			c.s.log.Warn("watching RBAC objects failed; listing again", "resource", rbacResourceNames[i], "error", err)
		}
		select {
		case <-ctx.Done():
		case <-c.s.clock.After(crdRetryDelay):
		}
	}
}

func (c *rbacCache) listAndWatch(ctx context.Context, i int, first *bool) error {
	res := c.res[i]
	list := res.strategy.NewList()
	if err := res.store.GetList(ctx, res.prefix(""), storage.ListOptions{Recursive: true}, list); err != nil {
		return err
	}
	objs := map[string]runtime.Object{}
	items, err := listItems(list)
	if err != nil {
		return err
	}
	for _, o := range items {
		m := accessor(o)
		objs[m.GetNamespace()+"/"+m.GetName()] = o
	}
	c.publish(i, objs)
	if *first {
		*first = false
		if c.listed.Add(1) == int32(len(c.res)) {
			c.syncedOnce.Do(func() {
				c.isSynced.Store(true)
				close(c.synced)
			})
		}
	}
	w, err := res.store.Watch(ctx, res.prefix(""), storage.ListOptions{Recursive: true, ResourceVersion: accessorList(list)})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		var ev storage.Event
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case ev, ok = <-w.ResultChan():
		}
		// Apply every event already waiting before publishing once.
		for {
			if !ok {
				return errors.New("watch closed")
			}
			if ev.Type == watch.Error {
				return fmt.Errorf("watch: %s", errorMessage(ev.Object))
			}
			if ev.Object != nil && ev.Type != watch.Bookmark {
				m := accessor(ev.Object)
				key := m.GetNamespace() + "/" + m.GetName()
				if ev.Type == watch.Deleted {
					delete(objs, key)
				} else {
					objs[key] = ev.Object
				}
			}
			more := false
			select {
			case ev, ok = <-w.ResultChan():
				more = true
			default:
			}
			if !more {
				break
			}
		}
		c.publish(i, objs)
	}
}

// accessorList returns the resourceVersion of a list.
func accessorList(list runtime.Object) string {
	if l, ok := list.(interface{ GetResourceVersion() string }); ok {
		return l.GetResourceVersion()
	}
	return ""
}

// publish replaces the snapshot of resource i with objs.
func (c *rbacCache) publish(i int, objs map[string]runtime.Object) {
	switch rbacResourceNames[i] {
	case "roles":
		m := map[string]map[string]*rbacv1.Role{}
		for _, o := range objs {
			r, ok := o.(*rbacv1.Role)
			if !ok {
				continue
			}
			if m[r.Namespace] == nil {
				m[r.Namespace] = map[string]*rbacv1.Role{}
			}
			m[r.Namespace][r.Name] = r
		}
		c.roles.Store(&m)
	case "rolebindings":
		m := map[string][]*rbacv1.RoleBinding{}
		for _, o := range objs {
			if b, ok := o.(*rbacv1.RoleBinding); ok {
				m[b.Namespace] = append(m[b.Namespace], b)
			}
		}
		for _, l := range m {
			slices.SortFunc(l, func(a, b *rbacv1.RoleBinding) int { return strings.Compare(a.Name, b.Name) })
		}
		c.roleBindings.Store(&m)
	case "clusterroles":
		m := map[string]*rbacv1.ClusterRole{}
		for _, o := range objs {
			if r, ok := o.(*rbacv1.ClusterRole); ok {
				m[r.Name] = r
			}
		}
		c.clusterRoles.Store(&m)
	case "clusterrolebindings":
		var l []*rbacv1.ClusterRoleBinding
		for _, o := range objs {
			if b, ok := o.(*rbacv1.ClusterRoleBinding); ok {
				l = append(l, b)
			}
		}
		slices.SortFunc(l, func(a, b *rbacv1.ClusterRoleBinding) int { return strings.Compare(a.Name, b.Name) })
		c.crbs.Store(&l)
	}
	c.notify()
}
