#!/usr/bin/env bash
# Runs Kubernetes' own components against kplane, and kplane's controller
# manager against Kubernetes' own API server.
#
#   run.sh [forward|reverse|all]   (default all)
#
# forward: kube-scheduler and kube-controller-manager, built from
#   k8s.io/kubernetes, against `kplane up` with kplane's controllers off
#   and only its simulated nodes on (they run the pods, kube-scheduler
#   binds them); a Deployment rolls out, then one check per
#   kube-controller-manager controller prints PASS or FAIL.
# reverse: kube-apiserver (same module) on etcd, with certificates made
#   by openssl, and `kplane controller-manager --kubeconfig` with its node
#   simulator against it; a Deployment rolls out.
#
# The Kubernetes binaries are built once into $KUBE_COMPONENTS_CACHE
# (default ${XDG_CACHE_HOME:-~/.cache}/kplane-kube-components): the first
# build takes many minutes. Everything else goes to a temporary directory,
# each component's log included; on failure their tails are printed.
# KEEP=1 keeps that directory.
#
# Needs go, kubectl, openssl and python3 (to pick free ports).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${KUBE_COMPONENTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kplane-kube-components}
phase=${1:-all}
# kube_version is the k8s.io/kubernetes version go.mod requires.
kube_version=$(awk '$1 == "k8s.io/kubernetes" {print $2}' "$here/go.mod")
case $phase in forward | reverse | all) ;; *)
	echo "usage: $0 [forward|reverse|all]" >&2
	exit 2
	;;
esac
for tool in go kubectl openssl python3; do
	command -v "$tool" >/dev/null || {
		echo "$tool is required" >&2
		exit 2
	}
done

work=$(mktemp -d "${TMPDIR:-/tmp}/kube-components.XXXXXX")
pids=()
cleanup() {
	local rc=$?
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	if [[ $rc -ne 0 || -n ${failed:-} ]]; then
		for log in "$work"/*.log; do
			[[ -f $log ]] || continue
			echo "==== tail of $log"
			tail -n 20 "$log"
		done
	fi
	if [[ -n ${KEEP:-} ]]; then echo "kept $work"; else rm -rf "$work"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "[$(date +%H:%M:%S)] $*"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# until SECONDS CMD...: runs CMD every half second until it succeeds, or
# fails when SECONDS have passed.
until_ok() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || return 1
		sleep 0.5
	done
}

# build_kube NAME PACKAGE builds a command of the kube-components module
# into the cache unless it is there.
build_kube() {
	local name=$1 pkg=$2
	if [[ -x $cache/$name ]]; then
		log "$name: cached in $cache"
		return
	fi
	mkdir -p "$cache"
	local start=$SECONDS
	log "$name: building (this takes minutes)"
	# The version Kubernetes' own build stamps (they report v0.0.0 without).
	local v=k8s.io/component-base/version
	(cd "$here" && go build -trimpath -ldflags "-X $v.gitVersion=$kube_version -X $v.gitMajor=1 -X $v.gitMinor=37" \
		-o "$cache/$name.tmp" "$pkg")
	mv "$cache/$name.tmp" "$cache/$name"
	log "$name: built in $((SECONDS - start))s"
}

build_kplane() {
	local start=$SECONDS
	(cd "$root" && go build -o "$work/bin/kplane" ./cmd/kplane)
	log "kplane: built in $((SECONDS - start))s"
}

# Results: one line per check, printed as a table at the end.
results=()
failed=
# check NAME DESCRIPTION CMD...: records PASS when CMD succeeds.
check() {
	local name=$1 what=$2
	shift 2
	local start=$SECONDS
	if "$@" >>"$work/checks.log" 2>&1; then
		results+=("$(printf '%-34s PASS %4ss  %s' "$name" $((SECONDS - start)) "$what")")
	else
		results+=("$(printf '%-34s FAIL %4ss  %s' "$name" $((SECONDS - start)) "$what")")
		failed=1
	fi
	log "$name: ${results[-1]:35:4}"
}

print_results() {
	echo
	printf '%-34s %-4s %5s  %s\n' CHECK RESULT TIME WHAT
	printf '%s\n' "${results[@]}"
}

k() { kubectl --kubeconfig "$kubeconfig" "$@"; }

# jsonpath_is WANT ARGS...: kubectl get ARGS prints exactly WANT.
jsonpath_is() {
	local want=$1
	shift
	[[ $(k get "$@") == "$want" ]]
}

# client_cert NAME CN ORG CA_DIR: a client certificate and key signed by the
# CA in CA_DIR (ca.crt, ca.key), in $work/NAME.{crt,key}.
client_cert() {
	local name=$1 cn=$2 org=$3 ca=$4 subj="/CN=$2"
	[[ -n $org ]] && subj="/O=$org/CN=$cn"
	openssl ecparam -name prime256v1 -genkey -noout -out "$work/$name.key" 2>/dev/null
	openssl req -new -key "$work/$name.key" -subj "$subj" -out "$work/$name.csr" 2>/dev/null
	openssl x509 -req -in "$work/$name.csr" -CA "$ca/ca.crt" -CAkey "$ca/ca.key" -CAcreateserial \
		-days 2 -out "$work/$name.crt" \
		-extfile <(printf 'keyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n') 2>/dev/null
}

# write_kubeconfig FILE SERVER CA CERT KEY
write_kubeconfig() {
	local file=$1
	kubectl config --kubeconfig "$file" set-cluster c --server "$2" --certificate-authority "$3" --embed-certs >/dev/null
	kubectl config --kubeconfig "$file" set-credentials u --client-certificate "$4" --client-key "$5" --embed-certs >/dev/null
	kubectl config --kubeconfig "$file" set-context c --cluster c --user u >/dev/null
	kubectl config --kubeconfig "$file" use-context c >/dev/null
}

# start NAME CMD...: runs CMD in the background, its output in $work/NAME.log.
start() {
	local name=$1
	shift
	"$@" >"$work/$name.log" 2>&1 &
	pids+=($!)
}

# ---- forward: kube-scheduler and kube-controller-manager against kplane

# The checks, each a function that succeeds when the controller did its
# work. They run in order in namespace demo (some in namespaces of their own).

deployment_rolled_out() {
	k -n demo create deployment web --image=nginx --replicas=3 &&
		k -n demo rollout status deployment/web --timeout=120s &&
		until_ok 30 jsonpath_is 3 -n demo deployment web -o 'jsonpath={.status.availableReplicas}'
}

# The ReplicaSet and its pods were written by kube-controller-manager:
# kplane's own controllers are off.
replicaset_by_kcm() {
	local rs
	rs=$(k -n demo get rs -l app=web -o 'jsonpath={.items[0].metadata.name}') &&
		k -n demo get rs "$rs" -o 'jsonpath={.metadata.managedFields[*].manager}' | grep -q kube-controller-manager
}

pods_bound_by_scheduler() {
	local nodes events
	nodes=$(k -n demo get pods -l app=web -o 'jsonpath={range .items[*]}{.spec.nodeName}{"\n"}{end}')
	echo "nodes: $nodes"
	[[ $(grep -c '^kplane-node-' <<<"$nodes") == 3 ]] || return 1
	events=$(k -n demo get events.v1.events.k8s.io -o 'jsonpath={range .items[?(@.reason=="Scheduled")]}{.reportingController}{"\n"}{end}')
	echo "Scheduled events by: $events"
	[[ $(grep -c '^default-scheduler$' <<<"$events") -ge 3 ]]
}

leases_held() {
	[[ -n $(k -n kube-system get lease kube-scheduler -o 'jsonpath={.spec.holderIdentity}') ]] &&
		[[ -n $(k -n kube-system get lease kube-controller-manager -o 'jsonpath={.spec.holderIdentity}') ]]
}

deployment_scaled() {
	k -n demo scale deployment web --replicas=5 &&
		until_ok 60 jsonpath_is 5 -n demo deployment web -o 'jsonpath={.status.availableReplicas}'
}

rs_count_is() { [[ $(k -n demo get rs -l app=web -o name | wc -l) == "$1" ]]; }
rolling_update() {
	k -n demo set image deployment/web nginx=nginx:1.27 &&
		k -n demo rollout status deployment/web --timeout=120s &&
		rs_count_is 2
}

endpointslices() {
	k -n demo expose deployment web --port 80 &&
		until_ok 60 eval '[[ $(k -n demo get endpointslices -l kubernetes.io/service-name=web -o "jsonpath={.items[*].endpoints[*].addresses[0]}" | wc -w) == 5 ]]'
}

endpoints() {
	until_ok 60 eval '[[ $(k -n demo get endpoints web -o "jsonpath={.subsets[0].addresses[*].ip}" | wc -w) == 5 ]]'
}

job_completes() {
	k -n demo create job once --image=busybox -- true &&
		k -n demo wait --for=condition=Complete job/once --timeout=90s
}

ttl_after_finished() {
	k -n demo apply -f - <<-'EOF' &&
		apiVersion: batch/v1
		kind: Job
		metadata: {name: short-lived}
		spec:
		  ttlSecondsAfterFinished: 0
		  template:
		    spec:
		      restartPolicy: Never
		      containers: [{name: c, image: busybox}]
	EOF
		until_ok 90 eval '! k -n demo get job short-lived'
}

daemonset() {
	k -n demo apply -f - <<-'EOF' &&
		apiVersion: apps/v1
		kind: DaemonSet
		metadata: {name: agent}
		spec:
		  selector: {matchLabels: {app: agent}}
		  template:
		    metadata: {labels: {app: agent}}
		    spec: {containers: [{name: c, image: busybox}]}
	EOF
		k -n demo rollout status daemonset/agent --timeout=120s &&
		jsonpath_is 3 -n demo daemonset agent -o 'jsonpath={.status.numberReady}'
}

statefulset() {
	k -n demo apply -f - <<-'EOF' &&
		apiVersion: v1
		kind: Service
		metadata: {name: db}
		spec: {clusterIP: None, selector: {app: db}, ports: [{port: 5432}]}
		---
		apiVersion: apps/v1
		kind: StatefulSet
		metadata: {name: db}
		spec:
		  serviceName: db
		  replicas: 2
		  selector: {matchLabels: {app: db}}
		  template:
		    metadata: {labels: {app: db}}
		    spec: {containers: [{name: c, image: postgres}]}
	EOF
		k -n demo rollout status statefulset/db --timeout=120s &&
		k -n demo get pod db-0 db-1
}

replicationcontroller() {
	k -n demo apply -f - <<-'EOF' &&
		apiVersion: v1
		kind: ReplicationController
		metadata: {name: legacy}
		spec:
		  replicas: 2
		  selector: {app: legacy}
		  template:
		    metadata: {labels: {app: legacy}}
		    spec: {containers: [{name: c, image: nginx}]}
	EOF
		until_ok 60 jsonpath_is 2 -n demo rc legacy -o 'jsonpath={.status.readyReplicas}'
}

cronjob() {
	k -n demo create cronjob tick --image=busybox --schedule='* * * * *' -- true &&
		until_ok 90 eval '[[ -n $(k -n demo get cronjob tick -o "jsonpath={.status.lastSuccessfulTime}") ]]'
}

disruption() {
	k -n demo create poddisruptionbudget web --selector app=web --min-available 1 &&
		until_ok 60 jsonpath_is 5 -n demo pdb web -o 'jsonpath={.status.currentHealthy}'
}

resourcequota() {
	k -n demo create quota pods --hard pods=100 &&
		until_ok 60 eval '[[ -n $(k -n demo get quota pods -o "jsonpath={.status.used.pods}") ]]'
}

serviceaccount() {
	k create namespace sa-check &&
		until_ok 30 k -n sa-check get serviceaccount default
}

root_ca_publisher() {
	until_ok 30 eval '[[ -n $(k -n sa-check get configmap kube-root-ca.crt -o "jsonpath={.data.ca\.crt}") ]]'
}

serviceaccount_token_secret() {
	k -n sa-check apply -f - <<-'EOF' &&
		apiVersion: v1
		kind: Secret
		metadata:
		  name: default-token
		  annotations: {kubernetes.io/service-account.name: default}
		type: kubernetes.io/service-account-token
	EOF
		until_ok 30 eval '[[ -n $(k -n sa-check get secret default-token -o "jsonpath={.data.token}") ]]'
}

csr_signing() {
	openssl ecparam -name prime256v1 -genkey -noout -out "$work/someone.key" 2>/dev/null &&
		openssl req -new -key "$work/someone.key" -subj "/CN=someone" -out "$work/someone.csr" 2>/dev/null &&
		k apply -f - <<-EOF &&
			apiVersion: certificates.k8s.io/v1
			kind: CertificateSigningRequest
			metadata: {name: someone}
			spec:
			  request: $(base64 -w0 <"$work/someone.csr")
			  signerName: kubernetes.io/kube-apiserver-client
			  usages: [client auth]
		EOF
		k certificate approve someone &&
		until_ok 30 eval '[[ -n $(k get csr someone -o "jsonpath={.status.certificate}") ]]'
}

clusterrole_aggregation() {
	k apply -f - <<-'EOF' &&
		apiVersion: rbac.authorization.k8s.io/v1
		kind: ClusterRole
		metadata:
		  name: widgets-view
		  labels: {rbac.authorization.k8s.io/aggregate-to-view: "true"}
		rules: [{apiGroups: [example.com], resources: [widgets], verbs: [get]}]
	EOF
		until_ok 30 eval 'k get clusterrole view -o "jsonpath={.rules[*].resources}" | grep -q widgets'
}

garbage_collection() {
	k -n demo delete deployment web --wait=false &&
		until_ok 60 eval '[[ -z $(k -n demo get rs,pods -l app=web -o name) ]]'
}

namespace_deletion() {
	k create namespace doomed &&
		k -n doomed create configmap c --from-literal=a=b &&
		k -n doomed create deployment d --image=nginx &&
		k delete namespace doomed --wait=false &&
		until_ok 90 eval '! k get namespace doomed'
}

nodes_stay_ready() {
	# The node lifecycle controller watches the simulated nodes' Leases;
	# taints would mean it found them unhealthy.
	[[ -z $(k get nodes -o 'jsonpath={.items[*].spec.taints}') ]] &&
		[[ $(k get nodes -o 'jsonpath={.items[*].status.conditions[?(@.type=="Ready")].status}') == "True True True" ]]
}

forward() {
	log "== forward: kube-scheduler and kube-controller-manager against kplane"
	build_kube kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
	build_kube kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
	build_kplane

	local data=$work/kplane port
	port=$(free_port)
	start kplane "$work/bin/kplane" up --data-dir "$data" --port "$port" --controllers nodesim --node-scheduling=false \
		--nodes 3 --health-address ""
	kubeconfig=$data/kubeconfig
	local start=$SECONDS
	until_ok 60 k get --raw /readyz || {
		log "kplane up did not become ready"
		return 1
	}
	log "kplane up: ready on port $port in $((SECONDS - start))s"

	# kube-controller-manager is system:kube-controller-manager, as kplane's
	# own controller manager; kube-scheduler gets a certificate from
	# kplane's CA as system:kube-scheduler.
	client_cert scheduler system:kube-scheduler "" "$data/pki"
	write_kubeconfig "$work/scheduler.kubeconfig" "https://127.0.0.1:$port" "$data/pki/ca.crt" "$work/scheduler.crt" "$work/scheduler.key"

	start kube-scheduler "$cache/kube-scheduler" --kubeconfig "$work/scheduler.kubeconfig" \
		--authentication-kubeconfig "$work/scheduler.kubeconfig" --authorization-kubeconfig "$work/scheduler.kubeconfig" \
		--leader-elect=true --secure-port 0 --v 2
	start kube-controller-manager "$cache/kube-controller-manager" --kubeconfig "$data/controller-manager.kubeconfig" \
		--authentication-kubeconfig "$data/controller-manager.kubeconfig" --authorization-kubeconfig "$data/controller-manager.kubeconfig" \
		--leader-elect=true --secure-port 0 --use-service-account-credentials=true \
		--service-account-private-key-file "$data/pki/sa.key" --root-ca-file "$data/pki/ca.crt" \
		--cluster-signing-cert-file "$data/pki/ca.crt" --cluster-signing-key-file "$data/pki/ca.key" \
		--controllers '*' --v 2

	k create namespace demo >/dev/null
	check deployment "Deployment of 3 rolls out" deployment_rolled_out
	check replicaset "ReplicaSet written by kube-controller-manager" replicaset_by_kcm
	check scheduler "pods bound by default-scheduler (nodeName, Scheduled event)" pods_bound_by_scheduler
	check leader-election "Leases kube-scheduler, kube-controller-manager held" leases_held
	check deployment-scale "scale to 5" deployment_scaled
	check deployment-rolling-update "new image rolls out, 2 ReplicaSets" rolling_update
	check endpointslice "Service gets EndpointSlice of 5" endpointslices
	check endpoints "Service gets Endpoints of 5" endpoints
	check job "Job completes" job_completes
	check ttl-after-finished "finished Job with ttl 0 deleted" ttl_after_finished
	check daemonset "DaemonSet on the 3 nodes" daemonset
	check statefulset "StatefulSet of 2 rolls out" statefulset
	check replicationcontroller "ReplicationController of 2 ready" replicationcontroller
	check disruption "PodDisruptionBudget status counts 5" disruption
	check resourcequota "ResourceQuota status.used filled" resourcequota
	check serviceaccount "new namespace gets ServiceAccount default" serviceaccount
	check root-ca-cert-publisher "new namespace gets kube-root-ca.crt" root_ca_publisher
	check serviceaccount-token "legacy token Secret gets a token" serviceaccount_token_secret
	check csrsigning "approved CSR gets a certificate" csr_signing
	check clusterrole-aggregation "aggregated rule appears in view" clusterrole_aggregation
	check garbagecollector "deleted Deployment's ReplicaSets and pods go" garbage_collection
	check namespace "namespace with contents deleted" namespace_deletion
	check cronjob "CronJob runs a Job (within a minute)" cronjob
	check nodelifecycle "simulated nodes stay Ready, untainted" nodes_stay_ready

	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	pids=()
}

# ---- reverse: kplane controller-manager against kube-apiserver

reverse() {
	log "== reverse: kplane controller-manager against kube-apiserver"
	build_kube kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
	build_kube etcd go.etcd.io/etcd/server/v3
	[[ -x $work/bin/kplane ]] || build_kplane

	local pki=$work/apiserver-pki etcd_port peer_port port
	mkdir -p "$pki"
	openssl ecparam -name prime256v1 -genkey -noout -out "$pki/ca.key" 2>/dev/null
	openssl req -x509 -new -key "$pki/ca.key" -subj "/CN=kube-components-ca" -days 2 -out "$pki/ca.crt" 2>/dev/null
	openssl ecparam -name prime256v1 -genkey -noout -out "$pki/server.key" 2>/dev/null
	openssl req -new -key "$pki/server.key" -subj "/CN=kube-apiserver" -out "$pki/server.csr" 2>/dev/null
	openssl x509 -req -in "$pki/server.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 2 -out "$pki/server.crt" \
		-extfile <(printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n') 2>/dev/null
	openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
	openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
	client_cert admin kube-admin system:masters "$pki"

	etcd_port=$(free_port)
	peer_port=$(free_port)
	start etcd "$cache/etcd" --data-dir "$work/etcd" --name kc \
		--listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
		--listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
		--initial-cluster "kc=http://127.0.0.1:$peer_port"
	port=$(free_port)
	start kube-apiserver "$cache/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
		--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$port" \
		--tls-cert-file "$pki/server.crt" --tls-private-key-file "$pki/server.key" --client-ca-file "$pki/ca.crt" \
		--service-account-issuer https://kubernetes.default.svc --service-account-key-file "$pki/sa.pub" \
		--service-account-signing-key-file "$pki/sa.key" --service-cluster-ip-range 10.96.0.0/16 \
		--authorization-mode Node,RBAC --cert-dir "$work/apiserver-certs" \
		--endpoint-reconciler-type none # it refuses the loopback advertise address
	kubeconfig=$work/reverse.kubeconfig
	write_kubeconfig "$kubeconfig" "https://127.0.0.1:$port" "$pki/ca.crt" "$work/admin.crt" "$work/admin.key"
	local start=$SECONDS
	until_ok 120 k get --raw /readyz || {
		log "kube-apiserver did not become ready"
		failed=1
		results+=("$(printf '%-34s FAIL %4ss  %s' kube-apiserver $((SECONDS - start)) "kube-apiserver became ready")")
		return 0
	}
	log "kube-apiserver: ready on port $port in $((SECONDS - start))s"
	# kube-apiserver's ServiceAccount admission turns pods away until their
	# namespace's default ServiceAccount exists: kplane's serviceaccount
	# controller (on under '*') makes it.
	start kplane-controller-manager "$work/bin/kplane" controller-manager --kubeconfig "$kubeconfig" \
		--controllers '*,nodesim' --nodes 3 --health-address "" --root-ca-file "$pki/ca.crt"

	until_ok 60 k get namespace default
	k create namespace demo >/dev/null
	check reverse-nodes "kplane's 3 simulated nodes registered" until_ok 60 jsonpath_is "True True True" nodes \
		-o 'jsonpath={.items[*].status.conditions[?(@.type=="Ready")].status}'
	check reverse-deployment "Deployment of 3 rolls out on kube-apiserver" deployment_rolled_out
	check reverse-scale "scale to 5" deployment_scaled
	check reverse-job "Job completes" job_completes
	check reverse-serviceaccount "new namespace gets ServiceAccount default" serviceaccount
	check reverse-garbagecollector "deleted Deployment's ReplicaSets and pods go" garbage_collection
	check reverse-namespace "namespace with contents deleted" namespace_deletion
}

total=$SECONDS
case $phase in
forward) forward ;;
reverse) reverse ;;
all)
	forward
	reverse
	;;
esac
print_results
log "done in $((SECONDS - total))s"
[[ -z $failed ]]
