package analyst

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestMountFailure(t *testing.T) {
	testEvents(t, mountFailure, []eventCase{
		{"Pod", "api-6b7c9d8f4-k2x9z", "FailedMount", corev1.EventTypeWarning,
			"Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[data kube-api-access-5x7kq]: timed out waiting for the condition",
			KindMountFailure, []string{"api pods are stuck because a volume mount fails (FailedMount)", "unmounted volumes=[data]"}},
		// A missing ConfigMap is a configuration error, not a storage one.
		{"Pod", "api-6b7c9d8f4-k2x9z", "FailedMount", corev1.EventTypeWarning, `MountVolume.SetUp failed for volume "config" : configmap "app-config" not found`, "", nil},
		{"Pod", "db-0", "FailedAttachVolume", corev1.EventTypeWarning, `Multi-Attach error for volume "pvc-3f1d9a7e" Volume is already exclusively attached to one node and can't be attached to another`,
			KindMountFailure, []string{"db pods are stuck", "Multi-Attach"}},
		{"Pod", "api-6b7c9d8f4-k2x9z", "SuccessfulMountVolume", corev1.EventTypeNormal, `MountVolume.SetUp succeeded for volume "config"`, "", nil},
	})
}

// The mount helper's own output is the reason a FailedMount's first line
// ("mount failed: exit status 32") does not give: NFS's access denied,
// the EFS helper's missing mount target, CIFS's permission error; a
// message without helper output keeps its first line only.
func TestMountHelperOutput(t *testing.T) {
	cases := []struct{ msg, head, out string }{
		{"MountVolume.SetUp failed for volume \"shared\" : mount failed: exit status 32\nMounting command: mount\nMounting arguments: -t nfs 10.0.4.12:/exports/shared /var/lib/kubelet/pods/x/volumes/kubernetes.io~nfs/shared\nOutput: mount.nfs: access denied by server while mounting 10.0.4.12:/exports/shared",
			"MountVolume.SetUp failed for volume \"shared\" : mount failed: exit status 32", "mount.nfs: access denied by server while mounting 10.0.4.12:/exports/shared"},
		{"MountVolume.SetUp failed for volume \"pv\" : rpc error: code = Internal desc = Could not mount \"fs-1:/\" at \"/var/lib/kubelet/pods/y/mount\": mount failed: exit status 32\nMounting command: mount\nMounting arguments: -t efs -o tls fs-1:/ /var/lib/kubelet/pods/y/mount\nOutput: Failed to resolve \"fs-1.efs.us-east-1.amazonaws.com\" - check that your file system ID is correct.\nSee https://docs.aws.amazon.com/console/efs/mount-dns-name for more detail.\nNo matching mount target in the az us-east-1d.",
			"MountVolume.SetUp failed for volume \"pv\" : rpc error: code = Internal desc = Could not mount \"fs-1:/\" at \"/var/lib/kubelet/pods/y/mount\": mount failed: exit status 32", "Failed to resolve \"fs-1.efs.us-east-1.amazonaws.com\" - check that your file system ID is correct. No matching mount target in the az us-east-1d."},
		{"MountVolume.MountDevice failed for volume \"files\" : rpc error: code = Internal desc = volume(rg#acct#share) mount //acct.file.core.windows.net/share on /var/lib/kubelet/plugins/z failed with mount failed: exit status 32\nMounting command: mount\nMounting arguments: -t cifs -o dir_mode=0777 //acct.file.core.windows.net/share /var/lib/kubelet/plugins/z\nOutput: mount error(13): Permission denied\nRefer to the mount.cifs(8) manual page (e.g. man mount.cifs) and kernel log messages (dmesg)",
			"MountVolume.MountDevice failed for volume \"files\" : rpc error: code = Internal desc = volume(rg#acct#share) mount //acct.file.core.windows.net/share on /var/lib/kubelet/plugins/z failed with mount failed: exit status 32", "mount error(13): Permission denied Refer to the mount.cifs(8) manual page (e.g. man mount.cifs) and kernel log messages (dmesg)"},
		{"Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[]: timed out waiting for the condition",
			"Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[]: timed out waiting for the condition", ""},
	}
	for _, c := range cases {
		head, out := mountHelperOutput(c.msg)
		if head != c.head || out != c.out {
			t.Errorf("mountHelperOutput(%q) = %q, %q; want %q, %q", c.msg, head, out, c.head, c.out)
		}
	}
}
