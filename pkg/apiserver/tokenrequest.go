package apiserver

import (
	"fmt"
	"math"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kplane/kplane/pkg/authentication"
)

var tokenRequestGVK = authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")

// Bounds of a TokenRequest's expirationSeconds, as kube-apiserver's.
const (
	defaultTokenExpirationSeconds = 3600
	minTokenExpirationSeconds     = 600
	maxTokenExpirationSeconds     = math.MaxUint32 + 1 // 2^32
)

// serveTokenRequest handles POST serviceaccounts/{name}/token (kubectl
// create token): it issues a token for the ServiceAccount, valid for
// spec.expirationSeconds (default 3600, at least 600, capped by
// ServiceAccountIssuerConfig.MaxTokenExpiration) to spec.audiences
// (default the API audiences), bound when spec.boundObjectRef says so to a
// Pod (which must run as the ServiceAccount), Secret or Node that exists
// (with the uid given, if any), as kube-apiserver does. A dry run
// validates everything and issues no token.
func (s *Server) serveTokenRequest(w http.ResponseWriter, r *http.Request, q *request) {
	tr := &authenticationv1.TokenRequest{}
	f, opts, warnings, ok := s.readSubresourceCreate(w, r, q, tr, tokenRequestGVK)
	if !ok {
		return
	}
	if tr.Spec.ExpirationSeconds == nil {
		tr.Spec.ExpirationSeconds = new(int64(defaultTokenExpirationSeconds))
	}
	if errs := validateTokenRequest(tr, q.namespace, q.name); len(errs) > 0 {
		s.writeError(w, r, apierrors.NewInvalid(tokenRequestGVK.GroupKind(), q.name, errs))
		return
	}
	var err error
	if tr, err = admitSubresourceCreate(s, w, r, q, "token", tokenRequestGVK, tr, opts); err != nil {
		s.writeErrorFor(w, r, err, q.gr(), q.name)
		return
	}
	ctx := r.Context()
	get := storeGetter{s: s, consistent: true} // as kube-apiserver, from storage
	sa, err := get.GetServiceAccount(ctx, q.namespace, q.name)
	if err != nil {
		s.writeErrorFor(w, r, err, q.gr(), q.name)
		return
	}
	is := s.issuer
	if len(tr.Spec.Audiences) == 0 {
		tr.Spec.Audiences = append([]string(nil), is.cfg.APIAudiences...)
	}
	tr.Name, tr.Namespace = sa.Name, sa.Namespace
	now := s.clock.Now()
	tr.CreationTimestamp = metav1.NewTime(now)
	tr.Status = authenticationv1.TokenRequestStatus{}

	binding := authentication.TokenBinding{ServiceAccount: sa}
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			gv = schema.GroupVersion{Group: "invalid", Version: ref.APIVersion}
		}
		gvk := gv.WithKind(ref.Kind)
		var uid types.UID
		switch {
		case gvk.Group == "" && gvk.Kind == "Pod":
			gr := schema.GroupResource{Resource: "pods"}
			pod, err := get.GetPod(ctx, q.namespace, ref.Name)
			if err != nil {
				s.writeErrorFor(w, r, err, gr, ref.Name)
				return
			}
			if pod.Spec.ServiceAccountName != sa.Name {
				s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", sa.Name)))
				return
			}
			binding.Pod, uid = pod, pod.UID
			if node := pod.Spec.NodeName; node != "" {
				// The node of the pod is named in the token; its uid only
				// when the node exists, as kube-apiserver does.
				n, err := get.GetNode(ctx, node)
				if err != nil {
					n = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
				}
				binding.Node = n
			}
		case gvk.Group == "" && gvk.Kind == "Secret":
			gr := schema.GroupResource{Resource: "secrets"}
			secret, err := get.GetSecret(ctx, q.namespace, ref.Name)
			if err != nil {
				s.writeErrorFor(w, r, err, gr, ref.Name)
				return
			}
			binding.Secret, uid = secret, secret.UID
		case gvk.Group == "" && gvk.Kind == "Node":
			gr := schema.GroupResource{Resource: "nodes"}
			node, err := get.GetNode(ctx, ref.Name)
			if err != nil {
				s.writeErrorFor(w, r, err, gr, ref.Name)
				return
			}
			binding.Node, uid = node, node.UID
		default:
			s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String())))
			return
		}
		if ref.UID != "" && ref.UID != uid {
			s.writeError(w, r, apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name,
				fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID)))
			return
		}
	}
	if limit := int64(is.cfg.MaxTokenExpiration / time.Second); limit > 0 && *tr.Spec.ExpirationSeconds > limit {
		warnings = append(warnings, fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", *tr.Spec.ExpirationSeconds, limit))
		tr.Spec.ExpirationSeconds = new(limit)
	}
	ttl := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	if !opts.dryRun {
		claims, err := authentication.NewServiceAccountClaims(is.cfg.Issuer, binding, tr.Spec.Audiences, now, ttl, string(uuid.NewUUID()))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		tok, err := is.cfg.Signer.Sign(claims)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		tr.Status.Token = tok
	}
	tr.Status.ExpirationTimestamp = metav1.NewTime(now.Add(ttl))
	tr.SetGroupVersionKind(tokenRequestGVK)
	addWarnings(w, warnings)
	s.writeObject(w, r, http.StatusCreated, f, tr)
}

// validateTokenRequest checks a TokenRequest for the ServiceAccount name
// in namespace, as kube-apiserver's validation does.
func validateTokenRequest(tr *authenticationv1.TokenRequest, namespace, name string) field.ErrorList {
	var errs field.ErrorList
	if tr.Name != "" && tr.Name != name {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), tr.Name, "must match the service account name if specified"))
	}
	if tr.Namespace != "" && tr.Namespace != namespace {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), tr.Namespace, "must match the service account namespace if specified"))
	}
	exp := field.NewPath("spec", "expirationSeconds")
	switch secs := *tr.Spec.ExpirationSeconds; {
	case secs < minTokenExpirationSeconds:
		errs = append(errs, field.Invalid(exp, secs, "may not specify a duration less than 10 minutes"))
	case secs > maxTokenExpirationSeconds:
		errs = append(errs, field.Invalid(exp, secs, "may not specify a duration larger than 2^32 seconds"))
	}
	if ref := tr.Spec.BoundObjectRef; ref != nil && ref.Name == "" {
		errs = append(errs, field.Required(field.NewPath("spec", "boundObjectRef", "name"), ""))
	}
	return errs
}
