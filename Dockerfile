# syntax=docker/dockerfile:1
# The workload-agent image: a static binary on distroless/static, running as the non-root user
# 65532 that config/agent/deployment.yaml asks for, with a read-only root filesystem (the agent
# writes no file). config/agent/dockerfile_test.go checks this file against the Deployment and the
# Makefile, and runs its go build.
#
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=$(git describe --tags --match 'v*' --dirty) \
#     --build-arg COMMIT=$(git rev-parse --short HEAD) \
#     -t ghcr.io/kubectl-workload/workload-agent:v0.1.0 .

# The build runs on the builder's platform and cross-compiles for the target one.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src
# Modules first: this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY pkg/ pkg/
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=v0.1.0-dev
ARG COMMIT=unknown
# As `make build`: static (no cgo), reproducible paths, the version stamped into pkg/version.
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath \
      -ldflags "-s -w -X github.com/kubectl-workload/kubectl-workload/pkg/version.Version=${VERSION} -X github.com/kubectl-workload/kubectl-workload/pkg/version.GitCommit=${COMMIT}" \
      -o /out/workload-agent ./cmd/agent

# No shell, no package manager: CA certificates, /etc/passwd with nonroot (65532), tzdata.
FROM gcr.io/distroless/static:nonroot
ARG VERSION=v0.1.0-dev
LABEL org.opencontainers.image.title="workload-agent" \
      org.opencontainers.image.description="Controllers for TApp, UnitedDeployment and Canary (apps.workload.dev)" \
      org.opencontainers.image.source="https://github.com/kubectl-workload/kubectl-workload" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/workload-agent /workload-agent
USER 65532:65532
# metrics (/metrics) and health (/healthz, /readyz): --metrics-addr and --health-addr in the
# Deployment.
EXPOSE 8080 8081
ENTRYPOINT ["/workload-agent"]
