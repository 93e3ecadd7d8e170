// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/archfilter/archfilter/apis/config
// +k8s:defaulter-gen=TypeMeta
// +k8s:defaulter-gen-input=github.com/archfilter/archfilter/apis/config/v1
// +groupName=kubescheduler.config.k8s.io

// Package v1 is the user-facing version of ArchFilterArgs, written in a
// KubeSchedulerConfiguration (apiVersion kubescheduler.config.k8s.io/v1).
package v1
