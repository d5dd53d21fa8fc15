package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GPUReservationAccess gives GPU reservation pods in namespace what the chart gives
// them (charts/sluice/templates/rbac-gpu-reservation.yaml): a ServiceAccount named
// account that may get and patch the pods of that namespace, since each reports the
// device the kubelet gave it on its own pod. On kwok nodes nothing runs the pods; on
// real nodes, without it, a reservation pod exits "forbidden" and restarts forever.
// Objects that exist already are kept.
func (c *Cluster) GPUReservationAccess(ctx context.Context, namespace, account string) error {
	client := c.Client()
	create := func(what string, err error) error {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("GPU reservation access: %s: %w", what, err)
		}
		return nil
	}
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if err := create("namespace "+namespace, err); err != nil {
		return err
	}
	_, err = client.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account}}, metav1.CreateOptions{})
	if err := create("ServiceAccount "+account, err); err != nil {
		return err
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: account},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "patch"}}}}
	_, err = client.RbacV1().Roles(namespace).Create(ctx, role, metav1.CreateOptions{})
	if err := create("Role "+account, err); err != nil {
		return err
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: account},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: account},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: namespace}}}
	_, err = client.RbacV1().RoleBindings(namespace).Create(ctx, binding, metav1.CreateOptions{})
	return create("RoleBinding "+account, err)
}
