package client

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// KubeconfigOptions says which kubeconfig files LoadKubeconfig reads and
// which context it uses.
type KubeconfigOptions struct {
	// Path, when set, is the only file read, as kubectl's --kubeconfig; it
	// must exist. Otherwise the files listed in $KUBECONFIG (separated by
	// the OS's list separator, ':' on Unix) are read and merged, skipping
	// those that do not exist; when $KUBECONFIG is empty, ~/.kube/config.
	Path string
	// Context is the context to use; "" means the current-context.
	Context string
	// Getenv reads the environment. Default os.Getenv.
	Getenv func(key string) string
	// HomeDir is the home directory holding .kube/config. Default
	// os.UserHomeDir().
	HomeDir string
}

// Kubeconfig is what LoadKubeconfig found.
type Kubeconfig struct {
	// Config connects to the context's cluster as the context's user.
	Config Config
	// Context is the name of the context used.
	Context string
	// Namespace is the context's namespace, "default" when it sets none.
	Namespace string
	// Files are the files that were read, in merge order.
	Files []string
}

// LoadKubeconfig reads kubeconfig files and returns the client settings of
// one context. Several files merge as kubectl merges them: for each cluster,
// user and context name, and for current-context, the first file that sets
// it wins. Relative file references resolve against the directory of the
// file that holds them; referenced files (certificates, keys, token files)
// are read now.
func LoadKubeconfig(opts KubeconfigOptions) (*Kubeconfig, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var files []string
	required := false
	switch {
	case opts.Path != "":
		files, required = []string{opts.Path}, true
	case getenv("KUBECONFIG") != "":
		for _, p := range filepath.SplitList(getenv("KUBECONFIG")) {
			if p != "" {
				files = append(files, p)
			}
		}
	default:
		home := opts.HomeDir
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return nil, fmt.Errorf("kubeconfig: no $KUBECONFIG and no home directory: %w", err)
			}
			home = h
		}
		files, required = []string{filepath.Join(home, ".kube", "config")}, true
	}

	merged := &kubeconfigFile{}
	var read []string
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f] {
			continue
		}
		seen[f] = true
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) && !required {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: %w", err)
		}
		kf, err := parseKubeconfig(data, filepath.Dir(f))
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", f, err)
		}
		merged.merge(kf)
		read = append(read, f)
	}
	if len(read) == 0 {
		return nil, fmt.Errorf("kubeconfig: none of the files in $KUBECONFIG exist (%s)", strings.Join(files, ", "))
	}
	k, err := merged.resolve(opts.Context)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig (%s): %w", strings.Join(read, ", "), err)
	}
	k.Files = read
	return k, nil
}

// kubeconfigFile is the part of the kubeconfig format (clientcmd's v1
// Config) that this package uses.
type kubeconfigFile struct {
	CurrentContext string         `json:"current-context"`
	Clusters       []namedCluster `json:"clusters"`
	Users          []namedUser    `json:"users"`
	Contexts       []namedContext `json:"contexts"`
}

type namedCluster struct {
	Name    string `json:"name"`
	Cluster struct {
		Server                   string `json:"server"`
		TLSServerName            string `json:"tls-server-name"`
		InsecureSkipTLSVerify    bool   `json:"insecure-skip-tls-verify"`
		CertificateAuthority     string `json:"certificate-authority"`
		CertificateAuthorityData []byte `json:"certificate-authority-data"`
		ProxyURL                 string `json:"proxy-url"`
	} `json:"cluster"`
}

type namedUser struct {
	Name string `json:"name"`
	User struct {
		ClientCertificate     string         `json:"client-certificate"`
		ClientCertificateData []byte         `json:"client-certificate-data"`
		ClientKey             string         `json:"client-key"`
		ClientKeyData         []byte         `json:"client-key-data"`
		Token                 string         `json:"token"`
		TokenFile             string         `json:"tokenFile"`
		Username              string         `json:"username"`
		Password              string         `json:"password"`
		AuthProvider          map[string]any `json:"auth-provider"`
		Exec                  map[string]any `json:"exec"`
	} `json:"user"`
}

type namedContext struct {
	Name    string `json:"name"`
	Context struct {
		Cluster   string `json:"cluster"`
		User      string `json:"user"`
		Namespace string `json:"namespace"`
	} `json:"context"`
}

// parseKubeconfig parses one file and makes its file references absolute
// against dir.
func parseKubeconfig(data []byte, dir string) (*kubeconfigFile, error) {
	var kf kubeconfigFile
	if err := yaml.Unmarshal(data, &kf); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	for kind, names := range map[string][]string{
		"cluster": namesOf(kf.Clusters, func(c namedCluster) string { return c.Name }),
		"user":    namesOf(kf.Users, func(u namedUser) string { return u.Name }),
		"context": namesOf(kf.Contexts, func(c namedContext) string { return c.Name }),
	} {
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] {
				return nil, fmt.Errorf("duplicate %s name %q", kind, n)
			}
			seen[n] = true
		}
	}
	abs := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	for i := range kf.Clusters {
		abs(&kf.Clusters[i].Cluster.CertificateAuthority)
	}
	for i := range kf.Users {
		u := &kf.Users[i].User
		abs(&u.ClientCertificate)
		abs(&u.ClientKey)
		abs(&u.TokenFile)
	}
	return &kf, nil
}

func namesOf[E any](es []E, name func(E) string) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = name(e)
	}
	return out
}

// merge adds what other sets and k does not yet.
func (k *kubeconfigFile) merge(other *kubeconfigFile) {
	if k.CurrentContext == "" {
		k.CurrentContext = other.CurrentContext
	}
	k.Clusters = appendNew(k.Clusters, other.Clusters, func(c namedCluster) string { return c.Name })
	k.Users = appendNew(k.Users, other.Users, func(u namedUser) string { return u.Name })
	k.Contexts = appendNew(k.Contexts, other.Contexts, func(c namedContext) string { return c.Name })
}

// appendNew appends the items of add whose name is not yet in have.
func appendNew[E any](have, add []E, name func(E) string) []E {
	names := make(map[string]bool, len(have))
	for _, e := range have {
		names[name(e)] = true
	}
	for _, e := range add {
		if !names[name(e)] {
			names[name(e)] = true
			have = append(have, e)
		}
	}
	return have
}

// resolve builds the settings of context ctxName ("" for the current one).
func (k *kubeconfigFile) resolve(ctxName string) (*Kubeconfig, error) {
	if ctxName == "" {
		ctxName = k.CurrentContext
		if ctxName == "" {
			return nil, errors.New("no current-context is set and no context was given")
		}
	}
	var kctx *namedContext
	for i := range k.Contexts {
		if k.Contexts[i].Name == ctxName {
			kctx = &k.Contexts[i]
		}
	}
	if kctx == nil {
		return nil, fmt.Errorf("context %q not found", ctxName)
	}
	if kctx.Context.Cluster == "" {
		return nil, fmt.Errorf("context %q names no cluster", ctxName)
	}
	var cluster *namedCluster
	for i := range k.Clusters {
		if k.Clusters[i].Name == kctx.Context.Cluster {
			cluster = &k.Clusters[i]
		}
	}
	if cluster == nil {
		return nil, fmt.Errorf("cluster %q of context %q not found", kctx.Context.Cluster, ctxName)
	}
	cl := cluster.Cluster
	if cl.Server == "" {
		return nil, fmt.Errorf("cluster %q has no server", cluster.Name)
	}
	if cl.ProxyURL != "" {
		return nil, fmt.Errorf("cluster %q: proxy-url is not supported", cluster.Name)
	}
	cfg := Config{
		Host:          cl.Server,
		TLSServerName: cl.TLSServerName,
		Insecure:      cl.InsecureSkipTLSVerify,
		CAData:        cl.CertificateAuthorityData,
	}
	if cl.CertificateAuthority != "" {
		data, err := os.ReadFile(cl.CertificateAuthority)
		if err != nil {
			return nil, fmt.Errorf("cluster %q: certificate-authority: %w", cluster.Name, err)
		}
		if len(cfg.CAData) == 0 {
			cfg.CAData = data
		}
	}
	if cfg.Insecure && len(cfg.CAData) > 0 {
		return nil, fmt.Errorf("cluster %q: insecure-skip-tls-verify excludes a certificate authority", cluster.Name)
	}

	if name := kctx.Context.User; name != "" {
		var user *namedUser
		for i := range k.Users {
			if k.Users[i].Name == name {
				user = &k.Users[i]
			}
		}
		if user == nil {
			return nil, fmt.Errorf("user %q of context %q not found", name, ctxName)
		}
		if err := user.apply(&cfg); err != nil {
			return nil, fmt.Errorf("user %q: %w", name, err)
		}
	}
	ns := kctx.Context.Namespace
	if ns == "" {
		ns = "default"
	}
	return &Kubeconfig{Config: cfg, Context: ctxName, Namespace: ns}, nil
}

// apply puts the user's credentials into cfg. Data fields win over files,
// as in kubectl.
func (u *namedUser) apply(cfg *Config) error {
	uu := u.User
	switch {
	case uu.Exec != nil:
		return errors.New("exec credential plugins are not supported")
	case uu.AuthProvider != nil:
		return errors.New("auth-provider plugins are not supported")
	case uu.Username != "" || uu.Password != "":
		return errors.New("basic authentication (username/password) is not supported")
	}
	cfg.BearerToken = uu.Token
	if cfg.BearerToken == "" && uu.TokenFile != "" {
		data, err := os.ReadFile(uu.TokenFile)
		if err != nil {
			return fmt.Errorf("tokenFile: %w", err)
		}
		cfg.BearerToken = strings.TrimSpace(string(data))
		if cfg.BearerToken == "" {
			return fmt.Errorf("tokenFile %s is empty", uu.TokenFile)
		}
	}
	cfg.CertData = uu.ClientCertificateData
	if len(cfg.CertData) == 0 && uu.ClientCertificate != "" {
		data, err := os.ReadFile(uu.ClientCertificate)
		if err != nil {
			return fmt.Errorf("client-certificate: %w", err)
		}
		cfg.CertData = data
	}
	cfg.KeyData = uu.ClientKeyData
	if len(cfg.KeyData) == 0 && uu.ClientKey != "" {
		data, err := os.ReadFile(uu.ClientKey)
		if err != nil {
			return fmt.Errorf("client-key: %w", err)
		}
		cfg.KeyData = data
	}
	if (len(cfg.CertData) == 0) != (len(cfg.KeyData) == 0) {
		return errors.New("a client certificate needs both a certificate and a key")
	}
	return nil
}
