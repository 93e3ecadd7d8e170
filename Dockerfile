# syntax=docker/dockerfile:1
# Cross-compiles on the build machine's platform for each TARGETPLATFORM
# (docker buildx --platform ...), then copies the static binary into a
# distroless, non-root image.
ARG GO_VERSION=1.26
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=v0.0.0-dev
ARG GIT_COMMIT=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH make build VERSION=$VERSION GIT_COMMIT=$GIT_COMMIT BINARY=/out/archfilter-scheduler

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/archfilter-scheduler /usr/local/bin/archfilter-scheduler
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/archfilter-scheduler"]
