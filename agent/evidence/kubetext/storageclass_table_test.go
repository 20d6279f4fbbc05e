package kubetext

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// TestGetStorageClassAndNamespaceTables reads the columns kubectl prints for
// `get storageclass` (the default class marked "(default)") and `get ns`.
func TestGetStorageClassAndNamespaceTables(t *testing.T) {
	in := `$ kubectl get storageclass
NAME                 PROVISIONER             RECLAIMPOLICY   VOLUMEBINDINGMODE      ALLOWVOLUMEEXPANSION   AGE
gp2                  kubernetes.io/aws-ebs   Delete          WaitForFirstConsumer   false                  412d
gp3-fast (default)   ebs.csi.aws.com         Retain          Immediate              true                   90d
$ kubectl get ns
NAME          STATUS        AGE
default       Active        412d
payments      Terminating   3h
`
	r := Parse([]byte(in), time.Date(2026, 5, 12, 9, 40, 0, 0, time.UTC))
	if len(r.Skipped) != 0 {
		t.Fatalf("skipped: %+v", r.Skipped)
	}
	scs := map[string]*storagev1.StorageClass{}
	nss := map[string]*corev1.Namespace{}
	for _, o := range r.Objects {
		switch v := o.(type) {
		case *storagev1.StorageClass:
			scs[v.Name] = v
		case *corev1.Namespace:
			nss[v.Name] = v
		}
	}
	gp3 := scs["gp3-fast"]
	if len(scs) != 2 || gp3 == nil || gp3.Provisioner != "ebs.csi.aws.com" || *gp3.ReclaimPolicy != corev1.PersistentVolumeReclaimRetain ||
		*gp3.VolumeBindingMode != storagev1.VolumeBindingImmediate || !*gp3.AllowVolumeExpansion ||
		gp3.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" {
		t.Errorf("storage classes: %+v", scs)
	}
	if gp2 := scs["gp2"]; gp2 == nil || *gp2.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer || gp2.Annotations["storageclass.kubernetes.io/is-default-class"] != "" {
		t.Errorf("gp2: %+v", gp2)
	}
	if len(nss) != 2 || nss["payments"].Status.Phase != corev1.NamespaceTerminating || nss["payments"].Namespace != "" {
		t.Errorf("namespaces: %+v", nss)
	}
}
