package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// GroupVersion is the API group and version of every type in this package.
var GroupVersion = schema.GroupVersion{Group: "scheduling.sluice.dev", Version: "v1alpha1"}

// SchemeBuilder registers this package's types; each type file adds its own
// kinds in an init function.
var SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

// AddToScheme adds Queue, PodGroup, Partition and QOS (and their lists) to a
// runtime.Scheme, as controller-runtime clients and managers expect.
var AddToScheme = SchemeBuilder.AddToScheme
