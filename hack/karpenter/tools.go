//go:build tools

// Package tools pins Karpenter's KWOK provider (sigs.k8s.io/karpenter/kwok, a
// main package) so `go build` in this module builds it.
package tools

import _ "sigs.k8s.io/karpenter/kwok"
