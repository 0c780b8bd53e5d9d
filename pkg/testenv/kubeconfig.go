package testenv

import (
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/kplane/kplane/pkg/client"
)

// RESTConfig is how to reach an environment's API server, with the fields
// of client-go's rest.Config of the same names, so that a client-go or
// controller-runtime user builds theirs from it directly:
//
//	cfg := &rest.Config{Host: env.REST.Host, BearerToken: env.REST.BearerToken,
//		TLSClientConfig: rest.TLSClientConfig{CAData: env.REST.CAData, CertData: env.REST.CertData, KeyData: env.REST.KeyData}}
//
// or, equally, clientcmd.RESTConfigFromKubeConfig(env.Kubeconfig).
type RESTConfig struct {
	// Host is the server's base URL, "http://127.0.0.1:port", or
	// "https://127.0.0.1:port" with TLS on.
	Host string
	// CAData is the PEM certificate of the environment's own CA, which
	// signed the serving certificate. Empty without TLS.
	CAData []byte
	// CertData and KeyData are a PEM client certificate signed by the CA
	// and its key. Empty without TLS.
	CertData []byte
	KeyData  []byte
	// BearerToken is a random token, different in every environment.
	// Every request must carry it or (with TLS) the client certificate,
	// except for /version and the health checks; others get 401.
	BearerToken string
}

// ClientConfig returns the settings of a kplane client for the server.
func (r RESTConfig) ClientConfig() client.Config {
	return client.Config{
		Host:        r.Host,
		CAData:      r.CAData,
		CertData:    r.CertData,
		KeyData:     r.KeyData,
		BearerToken: r.BearerToken,
		UserAgent:   "kplane-testenv",
	}
}

// The kubeconfig file format, reduced to what an environment writes.
type (
	kubeconfigFile struct {
		APIVersion     string         `json:"apiVersion"`
		Kind           string         `json:"kind"`
		Clusters       []namedCluster `json:"clusters"`
		Users          []namedUser    `json:"users"`
		Contexts       []namedContext `json:"contexts"`
		CurrentContext string         `json:"current-context"`
	}
	namedCluster struct {
		Name    string            `json:"name"`
		Cluster kubeconfigCluster `json:"cluster"`
	}
	kubeconfigCluster struct {
		Server                   string `json:"server"`
		CertificateAuthorityData []byte `json:"certificate-authority-data,omitempty"`
	}
	namedUser struct {
		Name string         `json:"name"`
		User kubeconfigUser `json:"user"`
	}
	kubeconfigUser struct {
		ClientCertificateData []byte `json:"client-certificate-data,omitempty"`
		ClientKeyData         []byte `json:"client-key-data,omitempty"`
		Token                 string `json:"token,omitempty"`
	}
	namedContext struct {
		Name    string            `json:"name"`
		Context kubeconfigContext `json:"context"`
	}
	kubeconfigContext struct {
		Cluster   string `json:"cluster"`
		User      string `json:"user"`
		Namespace string `json:"namespace,omitempty"`
	}
)

// kubeconfig renders a kubeconfig whose current context, "testenv", reaches
// the server as r's user in namespace "default". Byte slices are written
// base64-encoded, as the format wants.
func kubeconfig(r RESTConfig) ([]byte, error) {
	const name = "testenv"
	f := kubeconfigFile{
		APIVersion: "v1",
		Kind:       "Config",
		Clusters:   []namedCluster{{Name: name, Cluster: kubeconfigCluster{Server: r.Host, CertificateAuthorityData: r.CAData}}},
		Users: []namedUser{{Name: name, User: kubeconfigUser{
			ClientCertificateData: r.CertData, ClientKeyData: r.KeyData, Token: r.BearerToken,
		}}},
		Contexts:       []namedContext{{Name: name, Context: kubeconfigContext{Cluster: name, User: name, Namespace: "default"}}},
		CurrentContext: name,
	}
	data, err := yaml.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("testenv: render kubeconfig: %w", err)
	}
	return data, nil
}
