// Package platform owns the values archfilter reasons about when it matches images to nodes:
// os/architecture[/variant] platforms normalised the way container runtimes do, the sets of
// them a pod's images allow, and the platform a node reports through its labels.
package platform
