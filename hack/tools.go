//go:build tools

// Package hack pins the code generators (and, later, control-plane binaries built
// from the module graph) in go.mod so `go run` uses the versions we test with.
package hack

import (
	_ "k8s.io/code-generator/cmd/conversion-gen"
	_ "k8s.io/code-generator/cmd/deepcopy-gen"
	_ "k8s.io/code-generator/cmd/defaulter-gen"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
