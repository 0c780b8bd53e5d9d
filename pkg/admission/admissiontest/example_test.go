package admissiontest_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/admission/admissiontest"
)

// A plugin's test gives it a Source through admission.Config: here a
// ServiceAccount the cache has, and one only the store has yet.
func ExampleSource() {
	serviceAccounts := corev1.SchemeGroupVersion.WithResource("serviceaccounts")
	src := &admissiontest.Source{}
	src.Add(serviceAccounts, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "default"}})
	src.AddUncached(serviceAccounts, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "builder"}})
	cfg := &admission.Config{Source: src} // what a plugin's factory is given

	ctx := context.Background()
	_, err := cfg.Source.Get(ctx, serviceAccounts, "ns", "builder")
	fmt.Println("cache has builder:", !apierrors.IsNotFound(err))
	_, err = cfg.Source.Fetch(ctx, serviceAccounts, "ns", "builder")
	fmt.Println("store has builder:", err == nil, "after", src.Fetches(), "fetch")
	// Output:
	// cache has builder: false
	// store has builder: true after 1 fetch
}
