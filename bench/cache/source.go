// Package cache measures kplane's informer and cache side by side with
// client-go's, both fed from the same in-memory source (cachetest.Source).
package cache

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	kcache "github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/cache/cachetest"
)

// Pod returns a pod of realistic size (labels, owner, one container with
// resources, status conditions), about what a ReplicaSet creates.
func Pod(ns string, i int) *corev1.Pod {
	isController := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: fmt.Sprintf("web-7c9f8d6b5-%06d", i),
			UID:    "00000000-0000-0000-0000-000000000000",
			Labels: map[string]string{"app": "web", "pod-template-hash": "7c9f8d6b5", "tier": "frontend"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet",
				Name: "web-7c9f8d6b5", UID: "11111111-1111-1111-1111-111111111111", Controller: &isController}},
		},
		Spec: corev1.PodSpec{
			NodeName: fmt.Sprintf("node-%03d", i%100),
			Containers: []corev1.Container{{
				Name: "web", Image: "registry.example.com/web:1.2.3",
				Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
			}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		},
	}
}

// KplaneLW adapts a source to kplane's ListerWatcher the way a client does:
// listed items are deep copies (a client decodes its own objects) and watch
// events pass through one forwarding goroutine, exactly like ClientGoLW.
type KplaneLW struct {
	Src *cachetest.Source[*corev1.Pod]
}

// List returns a page of deep copies.
func (l KplaneLW) List(ctx context.Context, opts metav1.ListOptions) (*kcache.List[*corev1.Pod], error) {
	page, err := l.Src.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for i, p := range page.Items {
		page.Items[i] = p.DeepCopy()
	}
	return page, nil
}

// Watch forwards the source's events through a goroutine.
func (l KplaneLW) Watch(ctx context.Context, opts metav1.ListOptions) (kcache.Watch[*corev1.Pod], error) {
	w, err := l.Src.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	f := &fwd{in: w, out: make(chan kcache.Event[*corev1.Pod]), stop: make(chan struct{}), done: make(chan struct{})}
	go f.run()
	return f, nil
}

type fwd struct {
	in   kcache.Watch[*corev1.Pod]
	out  chan kcache.Event[*corev1.Pod]
	stop chan struct{}
	done chan struct{}
}

func (f *fwd) run() {
	defer close(f.done)
	defer close(f.out)
	defer f.in.Stop()
	for ev := range f.in.ResultChan() {
		if ev.Type == watch.Added && ev.Object != nil && len(ev.Object.Annotations) == 0 {
			// Initial events of a watch-list are decoded objects too.
			ev.Object = ev.Object.DeepCopy()
		}
		select {
		case f.out <- ev:
		case <-f.stop:
			return
		}
	}
}

func (f *fwd) ResultChan() <-chan kcache.Event[*corev1.Pod] { return f.out }

func (f *fwd) Stop() {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	<-f.done
}

// ClientGoLW adapts the same source to client-go: lists become PodLists of
// deep copies, watch events go through one forwarding goroutine.
func ClientGoLW(src *cachetest.Source[*corev1.Pod]) *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			page, err := src.List(ctx, opts)
			if err != nil {
				return nil, err
			}
			out := &corev1.PodList{ListMeta: page.ListMeta, Items: make([]corev1.Pod, len(page.Items))}
			for i, p := range page.Items {
				p.DeepCopyInto(&out.Items[i])
			}
			return out, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := src.Watch(ctx, opts)
			if err != nil {
				return nil, err
			}
			ch := make(chan watch.Event)
			pw := watch.NewProxyWatcher(ch)
			go func() {
				defer close(ch)
				defer w.Stop()
				for ev := range w.ResultChan() {
					var obj runtime.Object
					switch {
					case ev.Type == watch.Error:
						obj = ev.Status
					case ev.Type == watch.Added && len(ev.Object.Annotations) == 0:
						obj = ev.Object.DeepCopy()
					default:
						obj = ev.Object
					}
					select {
					case ch <- watch.Event{Type: ev.Type, Object: obj}:
					case <-pw.StopChan():
						return
					}
				}
			}()
			return pw, nil
		},
	}
}
