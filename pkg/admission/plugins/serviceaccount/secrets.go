package serviceaccount

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

func secretNames(sa *corev1.ServiceAccount) map[string]bool {
	out := make(map[string]bool, len(sa.Secrets))
	for _, s := range sa.Secrets {
		out[s.Name] = true
	}
	return out
}

// limitSecretReferences refuses a pod referring to a secret its
// ServiceAccount does not list: in a secret volume, in the env and envFrom
// of its init containers and containers, and as an imagePullSecret not
// among the ServiceAccount's.
func limitSecretReferences(sa *corev1.ServiceAccount, pod *corev1.Pod) error {
	mountable := secretNames(sa)
	for _, v := range pod.Spec.Volumes {
		if v.Secret == nil {
			continue
		}
		if !mountable[v.Secret.SecretName] {
			return fmt.Errorf("volume with secret.secretName=\"%s\" is not allowed because service account %s does not reference that secret", v.Secret.SecretName, sa.Name)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if err := checkEnv("init container", c.Name, c.Env, c.EnvFrom, mountable, sa.Name); err != nil {
			return err
		}
	}
	for _, c := range pod.Spec.Containers {
		if err := checkEnv("container", c.Name, c.Env, c.EnvFrom, mountable, sa.Name); err != nil {
			return err
		}
	}
	pull := make(map[string]bool, len(sa.ImagePullSecrets))
	for _, s := range sa.ImagePullSecrets {
		pull[s.Name] = true
	}
	for i, ref := range pod.Spec.ImagePullSecrets {
		if !pull[ref.Name] {
			return fmt.Errorf(`imagePullSecrets[%d].name="%s" is not allowed because service account %s does not reference that imagePullSecret`, i, ref.Name, sa.Name)
		}
	}
	return nil
}

// checkEnv refuses an env or envFrom of the container kind name that refers
// to a secret not in mountable.
func checkEnv(kind, name string, env []corev1.EnvVar, envFrom []corev1.EnvFromSource, mountable map[string]bool, sa string) error {
	for _, e := range env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		if !mountable[e.ValueFrom.SecretKeyRef.Name] {
			return fmt.Errorf("%s %s with envVar %s referencing secret.secretName=\"%s\" is not allowed because service account %s does not reference that secret", kind, name, e.Name, e.ValueFrom.SecretKeyRef.Name, sa)
		}
	}
	for _, e := range envFrom {
		if e.SecretRef == nil {
			continue
		}
		if !mountable[e.SecretRef.Name] {
			return fmt.Errorf("%s %s with envFrom referencing secret.secretName=\"%s\" is not allowed because service account %s does not reference that secret", kind, name, e.SecretRef.Name, sa)
		}
	}
	return nil
}

// refersToSecrets reports whether the pod refers to any secret: as an
// imagePullSecret, from the env of any of its containers, or from a volume.
func refersToSecrets(pod *corev1.Pod) bool {
	if len(pod.Spec.ImagePullSecrets) > 0 {
		return true
	}
	envRefers := func(env []corev1.EnvVar, envFrom []corev1.EnvFromSource) bool {
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				return true
			}
		}
		for _, e := range envFrom {
			if e.SecretRef != nil {
				return true
			}
		}
		return false
	}
	for _, c := range pod.Spec.InitContainers {
		if envRefers(c.Env, c.EnvFrom) {
			return true
		}
	}
	for _, c := range pod.Spec.Containers {
		if envRefers(c.Env, c.EnvFrom) {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if envRefers(c.Env, c.EnvFrom) {
			return true
		}
	}
	for _, v := range pod.Spec.Volumes {
		if volumeRefersToSecret(v.VolumeSource) {
			return true
		}
	}
	return false
}

func volumeRefersToSecret(v corev1.VolumeSource) bool {
	switch {
	case v.Secret != nil,
		v.AzureFile != nil,
		v.CephFS != nil && v.CephFS.SecretRef != nil,
		v.Cinder != nil && v.Cinder.SecretRef != nil,
		v.FlexVolume != nil && v.FlexVolume.SecretRef != nil,
		v.RBD != nil && v.RBD.SecretRef != nil,
		v.ScaleIO != nil && v.ScaleIO.SecretRef != nil,
		v.ISCSI != nil && v.ISCSI.SecretRef != nil,
		v.StorageOS != nil && v.StorageOS.SecretRef != nil,
		v.CSI != nil && v.CSI.NodePublishSecretRef != nil:
		return true
	}
	if v.Projected != nil {
		for _, s := range v.Projected.Sources {
			if s.Secret != nil {
				return true
			}
		}
	}
	return false
}
