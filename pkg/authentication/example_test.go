package authentication_test

import (
	"context"
	"crypto"
	"fmt"
	"net/http/httptest"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/authentication"
)

// serviceAccounts is a ServiceAccountGetter over one ServiceAccount.
type serviceAccounts struct{ sa *corev1.ServiceAccount }

func (g serviceAccounts) GetServiceAccount(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	if ns != g.sa.Namespace || name != g.sa.Name {
		return nil, fmt.Errorf("serviceaccount %s/%s not found", ns, name)
	}
	return g.sa, nil
}
func (serviceAccounts) GetPod(context.Context, string, string) (*corev1.Pod, error) {
	return nil, fmt.Errorf("no pods")
}
func (serviceAccounts) GetSecret(context.Context, string, string) (*corev1.Secret, error) {
	return nil, fmt.Errorf("no secrets")
}
func (serviceAccounts) GetNode(context.Context, string) (*corev1.Node, error) {
	return nil, fmt.Errorf("no nodes")
}

// A server issues a ServiceAccount token and later authenticates a
// request carrying it, next to users of a token file.
func Example() {
	signer, err := authentication.GenerateTokenSigner()
	if err != nil {
		panic(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "builder", UID: "1234"}}
	claims, err := authentication.NewServiceAccountClaims("https://kplane.local", authentication.TokenBinding{ServiceAccount: sa},
		[]string{"https://kplane.local"}, time.Now(), time.Hour, "token-1")
	if err != nil {
		panic(err)
	}
	token, err := signer.Sign(claims)
	if err != nil {
		panic(err)
	}

	saTokens, err := authentication.NewServiceAccountTokens(authentication.ServiceAccountTokensConfig{
		Issuers: []string{"https://kplane.local"},
		Keys:    []crypto.PublicKey{signer.PublicKey()},
		Getter:  serviceAccounts{sa},
	})
	if err != nil {
		panic(err)
	}
	staticTokens, err := authentication.ParseTokenFile(strings.NewReader("s3cret,alice,uid-1,\"dev,ops\"\n"))
	if err != nil {
		panic(err)
	}
	authn := authentication.Union(authentication.Bearer(staticTokens), authentication.Bearer(saTokens))

	for _, tok := range []string{token, "s3cret", "guess"} {
		r := httptest.NewRequest("GET", "/api/v1/pods", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		u, ok, err := authn.AuthenticateRequest(r)
		switch {
		case err != nil:
			fmt.Println("refused with 401")
		case ok:
			fmt.Println(u.Name, u.Groups)
		}
	}
	// Output:
	// system:serviceaccount:default:builder [system:serviceaccounts system:serviceaccounts:default system:authenticated]
	// alice [dev ops system:authenticated]
	// refused with 401
}
