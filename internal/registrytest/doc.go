// Package registrytest runs throwaway OCI registries for tests and pushes the image shapes
// archfilter must understand: indexes and manifest lists, single-platform images, schema1,
// buildx attestations, nested and sparse indexes, artifacts, and hostile manifests.
//
// NewMemory serves go-containerregistry's in-memory registry on 127.0.0.1 with optional
// Basic or Bearer authentication, fault injection and a log of every request, so tests can
// assert exact request counts. Fixtures push through the registry's HTTP API, so the same
// builders also fill any other registry a test starts.
package registrytest
