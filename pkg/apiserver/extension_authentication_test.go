package apiserver

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

const extensionAuthenticationPath = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"

func TestExtensionAuthenticationConfigMap(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   *ExtensionAuthentication
		want map[string]string
	}{
		{name: "client CA only", in: &ExtensionAuthentication{ClientCA: []byte("client PEM")},
			want: map[string]string{"client-ca-file": "client PEM"}},
		{name: "with a front proxy", in: &ExtensionAuthentication{
			ClientCA: []byte("client PEM"), RequestHeaderCA: []byte("proxy PEM"),
			RequestHeaderAllowedNames: []string{"front-proxy-client"}, RequestHeaderUsernameHeaders: []string{"X-Remote-User"},
			RequestHeaderGroupHeaders: []string{"X-Remote-Group"}, RequestHeaderExtraHeaderPrefixes: []string{"X-Remote-Extra-"},
		}, want: map[string]string{
			"client-ca-file":                     "client PEM",
			"requestheader-client-ca-file":       "proxy PEM",
			"requestheader-allowed-names":        `["front-proxy-client"]`,
			"requestheader-username-headers":     `["X-Remote-User"]`,
			"requestheader-uid-headers":          `[]`,
			"requestheader-group-headers":        `["X-Remote-Group"]`,
			"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t, func(c *Config) { c.ExtensionAuthentication = tc.in })
			var cm corev1.ConfigMap
			e.do("GET", extensionAuthenticationPath, nil).decode(t, &cm)
			if diff := cmp.Diff(tc.want, cm.Data); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExtensionAuthenticationNotPublishedWhenNil(t *testing.T) {
	e := newTestEnv(t)
	if r := e.do("GET", extensionAuthenticationPath, nil); r.code != 404 {
		t.Errorf("GET without ExtensionAuthentication: %d, want 404", r.code)
	}
}
