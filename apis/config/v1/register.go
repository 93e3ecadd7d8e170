package v1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	schedschemev1 "k8s.io/kube-scheduler/config/v1"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// SchemeGroupVersion is kubescheduler.config.k8s.io/v1, the version users write.
var SchemeGroupVersion = schema.GroupVersion{Group: schedconfig.GroupName, Version: "v1"}

var (
	localSchemeBuilder = &schedschemev1.SchemeBuilder
	// AddToScheme registers ArchFilterArgs v1 with its defaults and conversions.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &ArchFilterArgs{})
	return nil
}

func init() {
	// conversion-gen registers RegisterConversions itself (in
	// zz_generated.conversion.go's init); defaulter-gen does not register
	// RegisterDefaults, so it is registered here with the types.
	localSchemeBuilder.Register(addKnownTypes)
	localSchemeBuilder.Register(RegisterDefaults)
}
