// Package defaultstorageclass is the DefaultStorageClass admission plugin:
// a PersistentVolumeClaim created without a storage class (neither
// spec.storageClassName, even empty, nor the beta
// volume.beta.kubernetes.io/storage-class annotation) gets the cluster's
// default StorageClass, the one annotated
// storageclass.kubernetes.io/is-default-class=true (or the beta
// storageclass.beta.kubernetes.io/is-default-class). When several are,
// the newest by creationTimestamp wins, then the first by name, as
// Kubernetes chooses since 1.26; when none is, the claim is left as it is.
//
// StorageClasses are read from the admission.Source's cache; the plugin
// keeps no state and is safe for concurrent use.
package defaultstorageclass
