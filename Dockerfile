# syntax=docker/dockerfile:1
# The sluice binary (server, agent and the Slurm-style CLI) in a minimal,
# non-root image; the Helm chart's default image.
#   docker build -t ghcr.io/sluicehq/sluice:0.1.0 --build-arg VERSION=0.1.0 .

# Builder and runtime are both Debian 12 (bookworm), so the binary's glibc
# symbols exist in the runtime image.
FROM golang:1.26-bookworm AS build
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# cgo stays on: go-nvml loads libnvidia-ml.so.1 with dlopen (through cgo) at
# run time, from the driver the NVIDIA container runtime mounts into the
# agent's container; with CGO_ENABLED=0 the nvml package does not compile.
# So the binary links glibc dynamically and the runtime image carries glibc.
RUN CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/sluice ./cmd/sluice
# The launcher's PMIx server for srun --mpi=pmix, a C program linked with libpmix. The
# init container copies it into job pods beside the launcher; it runs there on the job
# image's libpmix.so.2 (every Open MPI install has one), never in this image.
RUN apt-get update && apt-get install -y --no-install-recommends libpmix-dev pkg-config && \
    gcc -O2 -Wall -o /out/sluice-pmix slurmapi/launch/pmix/sluice-pmix.c $(pkg-config --cflags --libs pmix) -lpthread

# distroless base: glibc and CA certificates, no shell, no package manager.
FROM gcr.io/distroless/base-debian12:nonroot
COPY --from=build /out/sluice /out/sluice-pmix /
# 65532 is distroless' nonroot user; the chart runs as the same uid.
USER 65532:65532
EXPOSE 6820 9443
ENTRYPOINT ["/sluice"]
