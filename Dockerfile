# syntax=docker/dockerfile:1
# Cross-compiles on the build machine's platform for each TARGETPLATFORM
# (docker buildx --platform ...), then copies the static binary into a
# distroless, non-root image. For Docker users: `make image` builds the same
# image (same binary flags, user 65532, labels) without any container engine
# (hack/image, internal/ociimage).
#
# FLAVOUR selects the build: main (Kubernetes 1.37, go.mod) or k8s1.35
# (Kubernetes 1.35 with sigs.k8s.io/scheduler-plugins, go.k8s1.35.mod). Tag the
# k8s1.35 image VERSION-k8s1.35 (make docker-buildx does).
# GOTOOLCHAIN is the Makefile's (hack/lib/go.sh): whatever Go the builder image
# has, the binaries are built with that toolchain.
ARG GO_VERSION=1.27
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ENV GOTOOLCHAIN=go1.27.3
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=v0.0.0-dev
ARG GIT_COMMIT=unknown
ARG BUILD_DATE=1970-01-01T00:00:00Z
ARG FLAVOUR=main
WORKDIR /src
COPY go.mod go.sum go.k8s1.35.mod go.k8s1.35.sum ./
# The golang image's GOPATH is /go: its module cache is /go/pkg/mod.
RUN --mount=type=cache,target=/go/pkg/mod \
    if [ "$FLAVOUR" = k8s1.35 ]; then go mod download -modfile=go.k8s1.35.mod; else go mod download; fi
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH make build-$FLAVOUR VERSION=$VERSION GIT_COMMIT=$GIT_COMMIT BUILD_DATE=$BUILD_DATE \
      BINARY=/out/archfilter-scheduler BINARY_K8S135=/out/archfilter-scheduler

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=v0.0.0-dev
ARG GIT_COMMIT=unknown
ARG BUILD_DATE=1970-01-01T00:00:00Z
ARG FLAVOUR=main
LABEL org.opencontainers.image.title=archfilter-scheduler \
      org.opencontainers.image.description="kube-scheduler with the ArchFilter plugin (${FLAVOUR} flavour)" \
      org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.revision=${GIT_COMMIT} \
      org.opencontainers.image.created=${BUILD_DATE} \
      org.opencontainers.image.source=https://github.com/archfilter/archfilter \
      org.opencontainers.image.licenses=Apache-2.0 \
      io.archfilter.flavour=${FLAVOUR}
COPY --from=build /out/archfilter-scheduler /usr/local/bin/archfilter-scheduler
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/archfilter-scheduler"]
