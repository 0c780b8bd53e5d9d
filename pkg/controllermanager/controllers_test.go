package controllermanager

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kplane/kplane/pkg/featuregate"
)

func TestEnabledControllers(t *testing.T) {
	tests := []struct {
		name    string
		list    []string
		want    []string
		wantErr string
	}{
		{name: "empty means star", list: nil, want: []string{"deployment", "replicaset", "statefulset", "garbagecollector", "namespace", "clusterrole-aggregation", "podgc", "disruption", "resourcequota", "replicationcontroller", "endpointslice", "endpoint", "serviceaccount", "root-ca-cert-publisher", "daemonset", "job", "cronjob", "ttl-after-finished"}},
		{name: "star", list: []string{"*"}, want: []string{"deployment", "replicaset", "statefulset", "garbagecollector", "namespace", "clusterrole-aggregation", "podgc", "disruption", "resourcequota", "replicationcontroller", "endpointslice", "endpoint", "serviceaccount", "root-ca-cert-publisher", "daemonset", "job", "cronjob", "ttl-after-finished"}},
		{name: "star plus off-by-default", list: []string{"*", "nodesim"}, want: []string{"deployment", "replicaset", "statefulset", "garbagecollector", "namespace", "clusterrole-aggregation", "podgc", "disruption", "resourcequota", "replicationcontroller", "endpointslice", "endpoint", "serviceaccount", "root-ca-cert-publisher", "daemonset", "job", "cronjob", "ttl-after-finished", "nodesim"}},
		{name: "star minus one", list: []string{"*", "-deployment"}, want: []string{"replicaset", "statefulset", "garbagecollector", "namespace", "clusterrole-aggregation", "podgc", "disruption", "resourcequota", "replicationcontroller", "endpointslice", "endpoint", "serviceaccount", "root-ca-cert-publisher", "daemonset", "job", "cronjob", "ttl-after-finished"}},
		{name: "only named", list: []string{"replicaset"}, want: []string{"replicaset"}},
		{name: "first mention wins: enable", list: []string{"replicaset", "-replicaset"}, want: []string{"replicaset"}},
		{name: "first mention wins: disable", list: []string{"-replicaset", "replicaset", "*"}, want: []string{"deployment", "statefulset", "garbagecollector", "namespace", "clusterrole-aggregation", "podgc", "disruption", "resourcequota", "replicationcontroller", "endpointslice", "endpoint", "serviceaccount", "root-ca-cert-publisher", "daemonset", "job", "cronjob", "ttl-after-finished"}},
		{name: "disable only", list: []string{"-deployment"}, want: nil},
		{name: "unknown", list: []string{"*", "no-such-controller"}, wantErr: `unknown controller "no-such-controller"`},
		{name: "unknown disabled", list: []string{"-no-such-controller"}, wantErr: `unknown controller "no-such-controller"`},
		{name: "empty name", list: []string{"*", ""}, wantErr: "empty controller name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := enabledControllers(tt.list)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, d := range got {
				names = append(names, d.name)
			}
			if diff := cmp.Diff(tt.want, names); diff != "" {
				t.Errorf("controllers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKnownAndDefaultControllers(t *testing.T) {
	if diff := cmp.Diff([]string{"clusterrole-aggregation", "cronjob", "daemonset", "deployment", "disruption", "endpoint", "endpointslice", "garbagecollector", "job", "namespace", "nodesim", "podgc", "replicaset", "replicationcontroller", "resourcequota", "root-ca-cert-publisher", "serviceaccount", "statefulset", "ttl-after-finished"}, KnownControllers()); diff != "" {
		t.Errorf("KnownControllers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"clusterrole-aggregation", "cronjob", "daemonset", "deployment", "disruption", "endpoint", "endpointslice", "garbagecollector", "job", "namespace", "podgc", "replicaset", "replicationcontroller", "resourcequota", "root-ca-cert-publisher", "serviceaccount", "statefulset", "ttl-after-finished"}, DefaultControllers()); diff != "" {
		t.Errorf("DefaultControllers (-want +got):\n%s", diff)
	}
}

func TestFeaturesIncludeControllers(t *testing.T) {
	f := Features()
	for _, name := range []string{string(WatchListClient), "DeploymentReplicaSetTerminatingReplicas"} {
		if _, ok := f[featuregate.Feature(name)]; !ok {
			t.Errorf("Features lacks %s", name)
		}
	}
	g, err := defaultGates()
	if err != nil {
		t.Fatal(err)
	}
	if !g.Enabled(WatchListClient) || !g.Enabled("DeploymentReplicaSetTerminatingReplicas") {
		t.Error("default gates do not enable the beta features")
	}
}
