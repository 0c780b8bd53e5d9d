// Package testenv starts a Kubernetes-compatible API server inside a test
// process, for testing controllers against the real wire protocol in
// milliseconds, without binaries to install.
//
//	env := testenv.Start(t, testenv.WithObjects(cm), testenv.WithController("mirror", run))
//	got := testenv.WaitFor(t, env, client.ConfigMaps, "default/copy", func(cm *corev1.ConfigMap) bool { ... })
//
// Start serves kplane's API server (package apiserver) on a loopback port
// over a memory store, with plain HTTP or, WithTLS, HTTPS from a CA made
// for that environment. The Env gives a kplane client, the URL, the
// connection settings in client-go's rest.Config shape, and a kubeconfig
// (bytes and file), so controllers written with pkg/client, client-go or
// controller-runtime all run against it unchanged.
//
// Guarantees:
//   - Isolation: every Start makes its own server, store, port, CA and
//     credentials, and the package has no global state, so any number of
//     environments run side by side in parallel tests.
//   - Teardown: the environment stops when the test ends (t.Cleanup) or at
//     Stop: controllers' contexts are cancelled and they are waited for,
//     then the server ends open watches and stops, and every goroutine the
//     environment started has returned when Stop returns.
//   - Failure reports: when the test has failed by teardown, every object
//     in the server is written to the test log as YAML; WaitFor's failure
//     shows the awaited object's last state.
//   - Waits (Wait, WaitFor, WaitDeleted, WaitForDeletion) are driven by
//     watch events, never by polling or sleeping.
//
// The server serves kplane's built-in resources (namespaces, pods, nodes,
// events, configmaps, secrets, deployments, replicasets, leases) and
// CustomResourceDefinitions; WithCRDs and WithCRDsFromDir install CRDs
// (envtest's CRDInstallOptions) and Start returns once they are
// Established, so their custom resources are served.
// Requests must authenticate, as on a real cluster, with the environment's
// bearer token or its client certificate (TLS only); an authenticated
// client may do anything, as a cluster administrator may.
package testenv
