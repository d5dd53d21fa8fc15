package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of every type in this package.
var GroupVersion = schema.GroupVersion{Group: "scheduling.sluice.dev", Version: "v1alpha1"}

// SchemeBuilder registers this package's types (apimachinery's builder, so the API
// package needs nothing beyond apimachinery); each type file adds its own kinds in an
// init function through register.
var SchemeBuilder runtime.SchemeBuilder

// AddToScheme adds Queue, PodGroup, Partition and QOS (and their lists) to a
// runtime.Scheme, as controller-runtime clients and managers expect.
var AddToScheme = SchemeBuilder.AddToScheme

// register adds kinds of this group version to SchemeBuilder.
func register(objects ...runtime.Object) {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, objects...)
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})
}
