// +k8s:deepcopy-gen=package
// +groupName=kubescheduler.config.k8s.io

// Package config holds the internal (hub) version of ArchFilterArgs, the plugin
// arguments decoded from a KubeSchedulerConfiguration pluginConfig entry.
package config
