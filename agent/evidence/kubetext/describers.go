package kubetext

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func init() {
	describers = map[string]func(p *parser, root *dnode, meta metav1.ObjectMeta) (runtime.Object, bool){
		"Pod":                     describePod,
		"Deployment":              describeDeployment,
		"ReplicaSet":              describeReplicaSet,
		"StatefulSet":             describeStatefulSet,
		"DaemonSet":               describeDaemonSet,
		"Job":                     describeJob,
		"CronJob":                 describeCronJob,
		"Node":                    describeNode,
		"PersistentVolumeClaim":   describePVC,
		"PersistentVolume":        describePV,
		"Service":                 describeService,
		"Ingress":                 describeIngress,
		"HorizontalPodAutoscaler": describeHPA,
		"NetworkPolicy":           describeNetworkPolicy,
		"PodDisruptionBudget":     describePDB,
		"ServiceAccount":          describeServiceAccount,
		"Role":                    describeRole,
		"ClusterRole":             describeClusterRole,
		"RoleBinding":             describeRoleBinding,
		"ClusterRoleBinding":      describeClusterRoleBinding,
		"Endpoints":               describeEndpoints,
		"Namespace":               describeNamespace,
		"StorageClass":            describeStorageClass,
	}
}
