package rootcacertpublisher

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
	writes []*corev1.ConfigMap
	verbs  []string
	err    error
}

func (r *recorder) Create(_ context.Context, cm *corev1.ConfigMap) error {
	r.verbs, r.writes = append(r.verbs, "create"), append(r.writes, cm)
	return r.err
}

func (r *recorder) Update(_ context.Context, cm *corev1.ConfigMap) error {
	r.verbs, r.writes = append(r.verbs, "update"), append(r.writes, cm)
	return r.err
}

const ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func TestSync(t *testing.T) {
	published := func(mod ...func(*corev1.ConfigMap)) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: ConfigMapName, ResourceVersion: "5", Annotations: map[string]string{DescriptionAnnotation: Description}},
			Data:       map[string]string{DataKey: ca},
		}
		for _, m := range mod {
			m(cm)
		}
		return cm
	}
	terminating := apierrors.NewForbidden(corev1.Resource("configmaps"), ConfigMapName, errors.New("namespace is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	tests := []struct {
		name     string
		existing *corev1.ConfigMap
		writeErr error
		verb     string
		want     *corev1.ConfigMap
		wantErr  bool
	}{
		{
			name: "created with the bundle and the description",
			verb: "create",
			want: func() *corev1.ConfigMap { cm := published(); cm.ResourceVersion = ""; return cm }(),
		},
		{name: "left alone when as it should be", existing: published()},
		{
			name:     "data edited is set back",
			existing: published(func(cm *corev1.ConfigMap) { cm.Data = map[string]string{DataKey: "evil", "extra": "x"} }),
			verb:     "update", want: published(),
		},
		{
			name:     "description removed is restored, other annotations kept",
			existing: published(func(cm *corev1.ConfigMap) { cm.Annotations = map[string]string{"mine": "yes"} }),
			verb:     "update",
			want:     published(func(cm *corev1.ConfigMap) { cm.Annotations["mine"] = "yes" }),
		},
		{
			name:     "a description changed but present is kept, as in Kubernetes",
			existing: published(func(cm *corev1.ConfigMap) { cm.Annotations[DescriptionAnnotation] = "other" }),
		},
		{name: "create in a terminating namespace is dropped", writeErr: terminating, verb: "create", want: func() *corev1.ConfigMap { cm := published(); cm.ResourceVersion = ""; return cm }()},
		{name: "create in a namespace gone is dropped", writeErr: apierrors.NewNotFound(corev1.Resource("namespaces"), "ns"), verb: "create", want: func() *corev1.ConfigMap { cm := published(); cm.ResourceVersion = ""; return cm }()},
		{name: "a conflict is retried", existing: published(func(cm *corev1.ConfigMap) { cm.Data = nil }), writeErr: apierrors.NewConflict(corev1.Resource("configmaps"), ConfigMapName, errors.New("changed")), verb: "update", want: published(), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			idx, err := cache.NewIndexer(cache.IndexerConfig[*corev1.ConfigMap]{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.existing != nil {
				idx.Add(tc.existing)
			}
			rec := &recorder{err: tc.writeErr}
			s := &syncer{configMaps: cache.NewLister(idx, corev1.Resource("configmaps")), writer: rec, rootCA: ca}
			err = s.sync(context.Background(), "ns")
			if (err != nil) != tc.wantErr {
				t.Errorf("sync error %v, want error %v", err, tc.wantErr)
			}
			if tc.verb == "" {
				if len(rec.verbs) != 0 {
					t.Fatalf("writes %v, want none", rec.verbs)
				}
				return
			}
			if !cmp.Equal(rec.verbs, []string{tc.verb}) {
				t.Fatalf("writes %v, want one %s", rec.verbs, tc.verb)
			}
			if diff := cmp.Diff(tc.want, rec.writes[0]); diff != "" {
				t.Errorf("written (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewRefusesNoCA(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New without client, informers or CA succeeded")
	}
}
