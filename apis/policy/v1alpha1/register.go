package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of archfilter's custom resources.
const GroupName = "archfilter.io"

// SchemeGroupVersion is archfilter.io/v1alpha1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Resource is the plural resource name of ArchFilterPolicy, as RBAC and
// discovery name it.
const Resource = "archfilterpolicies"

// Kind is ArchFilterPolicy's kind.
const Kind = "ArchFilterPolicy"

// SchemeGroupResource is archfilterpolicies.archfilter.io.
var SchemeGroupResource = schema.GroupResource{Group: GroupName, Resource: Resource}

// SchemeGroupVersionResource is archfilterpolicies in archfilter.io/v1alpha1, for
// dynamic clients and informers.
var SchemeGroupVersionResource = SchemeGroupVersion.WithResource(Resource)

var (
	// SchemeBuilder registers the types of this version.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds ArchFilterPolicy and its list to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &ArchFilterPolicy{}, &ArchFilterPolicyList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
