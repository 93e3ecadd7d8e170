//go:build !k8s1.35

package schedulercmd

// thisFlavour is the flavour this binary is (shippedFlavours' Name).
const thisFlavour = "main line"
