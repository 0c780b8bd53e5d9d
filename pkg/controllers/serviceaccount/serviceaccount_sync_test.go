package serviceaccount

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/cache"
)

type recorder struct {
	created []string
	err     error
}

func (r *recorder) Create(_ context.Context, sa *corev1.ServiceAccount) error {
	r.created = append(r.created, sa.Namespace+"/"+sa.Name)
	return r.err
}

func terminatingErr() error {
	err := apierrors.NewForbidden(corev1.Resource("serviceaccounts"), "default", errors.New("namespace is being terminated"))
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	return err
}

func TestSync(t *testing.T) {
	active := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	terminating := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	sa := func(name string) *corev1.ServiceAccount {
		return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}
	tests := []struct {
		name     string
		ns       *corev1.Namespace
		accounts []*corev1.ServiceAccount
		names    []string
		writeErr error
		want     []string
		wantErr  bool
	}{
		{name: "default service account created in an active namespace", ns: active, want: []string{"ns/default"}},
		{name: "existing default service account left alone", ns: active, accounts: []*corev1.ServiceAccount{sa("default")}},
		{name: "no service accounts in a terminating namespace", ns: terminating},
		{name: "nothing for a namespace gone"},
		{name: "every configured service account", ns: active, names: []string{"default", "builder"}, accounts: []*corev1.ServiceAccount{sa("builder")}, want: []string{"ns/default"}},
		{name: "already exists is success", ns: active, writeErr: apierrors.NewAlreadyExists(corev1.Resource("serviceaccounts"), "default"), want: []string{"ns/default"}},
		{name: "namespace terminating on create is dropped", ns: active, writeErr: terminatingErr(), want: []string{"ns/default"}},
		{name: "other errors are retried", ns: active, writeErr: apierrors.NewInternalError(errors.New("boom")), want: []string{"ns/default"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nsIdx, err := cache.NewIndexer(cache.IndexerConfig[*corev1.Namespace]{})
			if err != nil {
				t.Fatal(err)
			}
			saIdx, err := cache.NewIndexer(cache.IndexerConfig[*corev1.ServiceAccount]{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.ns != nil {
				nsIdx.Add(tc.ns)
			}
			for _, a := range tc.accounts {
				saIdx.Add(a)
			}
			names := tc.names
			if names == nil {
				names = []string{DefaultServiceAccount}
			}
			rec := &recorder{err: tc.writeErr}
			s := &syncer{
				namespaces: cache.NewLister(nsIdx, corev1.Resource("namespaces")),
				accounts:   cache.NewLister(saIdx, corev1.Resource("serviceaccounts")),
				writer:     rec, names: names,
			}
			err = s.sync(context.Background(), "ns")
			if (err != nil) != tc.wantErr {
				t.Errorf("sync error %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, rec.created); diff != "" {
				t.Errorf("created (-want +got):\n%s", diff)
			}
		})
	}
}
