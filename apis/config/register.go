package config

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// SchemeGroupVersion is the internal version of the kube-scheduler config group:
// plugin args live in the scheduler's own API group so that the framework finds
// them by kind ("<PluginName>Args").
var SchemeGroupVersion = schema.GroupVersion{Group: schedconfig.GroupName, Version: runtime.APIVersionInternal}

var (
	localSchemeBuilder = &schedconfig.SchemeBuilder
	// AddToScheme registers the internal ArchFilterArgs type.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &ArchFilterArgs{})
	return nil
}

func init() {
	localSchemeBuilder.Register(addKnownTypes)
}
