// Package framework is the shared machinery of the e2e suite and `make demo`:
// fake KWOK nodes of several platforms, seeded registry images, the
// archfilter-scheduler binary run as a process, workloads, and the placement
// table. It drives a real cluster through its kubeconfig only (black box).
package framework
