package apiserver

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ExtensionAuthentication is what the server publishes in the ConfigMap
// kube-system/extension-apiserver-authentication, as kube-apiserver does,
// so that extension API servers can authenticate the requests relayed to
// them: the client CA and the front-proxy (request-header) settings.
type ExtensionAuthentication struct {
	// ClientCA is the PEM bundle client certificates are verified against
	// (key client-ca-file). Empty leaves the key out.
	ClientCA []byte
	// RequestHeaderCA is the PEM bundle front proxies' certificates are
	// verified against (key requestheader-client-ca-file). Empty leaves
	// out every requestheader-* key.
	RequestHeaderCA []byte
	// The request-header settings, each published as a JSON array of
	// strings under the key of its kube-apiserver flag.
	RequestHeaderAllowedNames        []string
	RequestHeaderUsernameHeaders     []string
	RequestHeaderUIDHeaders          []string
	RequestHeaderGroupHeaders        []string
	RequestHeaderExtraHeaderPrefixes []string
}

// extensionAuthenticationName is the ConfigMap's name, in kube-system.
const extensionAuthenticationName = "extension-apiserver-authentication"

// data is the ConfigMap's data for a.
func (a *ExtensionAuthentication) data() (map[string]string, error) {
	d := map[string]string{}
	if len(a.ClientCA) > 0 {
		d["client-ca-file"] = string(a.ClientCA)
	}
	if len(a.RequestHeaderCA) == 0 {
		return d, nil
	}
	d["requestheader-client-ca-file"] = string(a.RequestHeaderCA)
	for key, list := range map[string][]string{
		"requestheader-allowed-names":        a.RequestHeaderAllowedNames,
		"requestheader-username-headers":     a.RequestHeaderUsernameHeaders,
		"requestheader-uid-headers":          a.RequestHeaderUIDHeaders,
		"requestheader-group-headers":        a.RequestHeaderGroupHeaders,
		"requestheader-extra-headers-prefix": a.RequestHeaderExtraHeaderPrefixes,
	} {
		if list == nil {
			list = []string{}
		}
		b, err := json.Marshal(list)
		if err != nil {
			return nil, fmt.Errorf("apiserver: %s: %w", key, err)
		}
		d[key] = string(b)
	}
	return d, nil
}

// publishExtensionAuthentication creates, or replaces, the ConfigMap
// kube-system/extension-apiserver-authentication from
// Config.ExtensionAuthentication; nil publishes nothing.
func (s *Server) publishExtensionAuthentication(ctx context.Context) error {
	a := s.cfg.ExtensionAuthentication
	if a == nil {
		return nil
	}
	data, err := a.data()
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: extensionAuthenticationName, Namespace: metav1.NamespaceSystem},
		Data:       data,
	}
	if err := s.putSystemObject(ctx, s.lookup(corev1.SchemeGroupVersion.WithResource("configmaps")), cm); err != nil {
		return fmt.Errorf("apiserver: publish %s/%s: %w", metav1.NamespaceSystem, extensionAuthenticationName, err)
	}
	return nil
}
