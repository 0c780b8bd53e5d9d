package defaulttolerationseconds

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/admission"
)

// DefaultSeconds is the toleration time added when the Config leaves it
// zero, as kube-apiserver's --default-not-ready-toleration-seconds and
// --default-unreachable-toleration-seconds default to.
const DefaultSeconds int64 = 300

var podsResource = schema.GroupResource{Resource: "pods"}

// plugin adds the default not-ready and unreachable tolerations to pods.
type plugin struct {
	notReady    int64
	unreachable int64
}

var _ admission.MutationInterface = (*plugin)(nil)

// New builds the plugin from cfg.DefaultNotReadyTolerationSeconds and
// cfg.DefaultUnreachableTolerationSeconds (DefaultSeconds when zero). It
// is an admission.Factory.
func New(cfg *admission.Config) (admission.Interface, error) {
	p := &plugin{notReady: DefaultSeconds, unreachable: DefaultSeconds}
	if cfg != nil {
		if cfg.DefaultNotReadyTolerationSeconds != 0 {
			p.notReady = cfg.DefaultNotReadyTolerationSeconds
		}
		if cfg.DefaultUnreachableTolerationSeconds != 0 {
			p.unreachable = cfg.DefaultUnreachableTolerationSeconds
		}
	}
	return p, nil
}

// Handles reports true for CREATE and UPDATE.
func (p *plugin) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Update
}

// Admit adds the tolerations a pod lacks.
func (p *plugin) Admit(_ context.Context, a *admission.Attributes) error {
	if a.Resource.GroupResource() != podsResource || a.Subresource != "" {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected *api.Pod but got %T", a.Object))
	}
	notReady, unreachable := false, false
	for _, t := range pod.Spec.Tolerations {
		if t.Effect != corev1.TaintEffectNoExecute && t.Effect != "" {
			continue
		}
		if t.Key == corev1.TaintNodeNotReady || t.Key == "" {
			notReady = true
		}
		if t.Key == corev1.TaintNodeUnreachable || t.Key == "" {
			unreachable = true
		}
	}
	if !notReady {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, toleration(corev1.TaintNodeNotReady, p.notReady))
	}
	if !unreachable {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, toleration(corev1.TaintNodeUnreachable, p.unreachable))
	}
	return nil
}

func toleration(key string, seconds int64) corev1.Toleration {
	return corev1.Toleration{
		Key:               key,
		Operator:          corev1.TolerationOpExists,
		Effect:            corev1.TaintEffectNoExecute,
		TolerationSeconds: &seconds,
	}
}
