#!/usr/bin/env bash
# Installs and starts what the full test suite needs beyond Go, from Debian's
# packages: PostgreSQL (the ledger's second backend), Chromium (the
# dashboard's browser test), slapd (the LDAP identity test), and what the
# rig's real nodes run on (containerd, runc, the CNI plugins; busybox-static
# and the job image's packages, which the rig builds its images from:
# test/cluster/images.go). Source it, then run `make test`:
#   source hack/test-deps.sh && make test
# It exports SLUICE_TEST_POSTGRES_DSN, SLUICE_REQUIRE_POSTGRES=1,
# SLUICE_REQUIRE_CHROMIUM=1 and SLUICE_REQUIRE_SLAPD=1 (so those tests fail
# rather than skip), and `sluice_test_deps_stop` stops the PostgreSQL cluster
# it started.
set -euo pipefail

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  echo "test-deps: installing postgresql from Debian's packages..."
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
# The real nodes' runtime and network, the packages the rig's images are made of, and
# MPICH and Slurm's libpmi2 for the PMI tests, Open MPI and libpmix-dev for the PMIx tests
# (the launcher's PMIx server is built against libpmix; both MPIs' runtimes go into the
# job image too).
real_node_packages="containerd runc containernetworking-plugins iproute2 iptables util-linux busybox-static
  bash coreutils grep sed hostname procps libc-bin base-files netbase
  python3.11-minimal libpython3.11-stdlib mpich libmpich-dev libpmi2-0-dev
  openmpi-bin libopenmpi-dev libpmix-dev pkg-config"
missing=""
for p in $real_node_packages; do
  dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "test-deps: installing$missing from Debian's packages..."
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
# OpenLDAP's server for the LDAP identity test (slurmapi/kube), which runs its own slapd
# on a loopback port: the package's system service is stopped if installing started it.
if ! [ -x /usr/sbin/slapd ] || ! command -v ldapsearch >/dev/null 2>&1; then
  echo "test-deps: installing slapd and ldap-utils from Debian's packages..."
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slapd ldap-utils >/dev/null
  as_root invoke-rc.d slapd stop >/dev/null 2>&1 || true
fi
if ! command -v chromium >/dev/null 2>&1; then
  echo "test-deps: installing chromium from Debian's packages..."
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
pg_version=$(ls /usr/lib/postgresql | sort -n | tail -1)
if ! as_root pg_ctlcluster "$pg_version" main status >/dev/null 2>&1; then
  echo "test-deps: starting PostgreSQL $pg_version"
  as_root pg_ctlcluster "$pg_version" main start
  SLUICE_STARTED_PG=$pg_version
fi
as_root runuser -u postgres -- psql -qtc "SELECT 1 FROM pg_roles WHERE rolname='sluice'" | grep -q 1 ||
  as_root runuser -u postgres -- psql -qc "CREATE ROLE sluice LOGIN SUPERUSER PASSWORD 'sluice'"
as_root runuser -u postgres -- psql -qtc "SELECT 1 FROM pg_database WHERE datname='sluice_test'" | grep -q 1 ||
  as_root runuser -u postgres -- psql -qc "CREATE DATABASE sluice_test OWNER sluice"

export SLUICE_TEST_POSTGRES_DSN="postgres://sluice:sluice@127.0.0.1:5432/sluice_test?sslmode=disable"
export SLUICE_REQUIRE_POSTGRES=1
export SLUICE_REQUIRE_CHROMIUM=1
export SLUICE_REQUIRE_SLAPD=1

sluice_test_deps_stop() {
  if [ -n "${SLUICE_STARTED_PG:-}" ]; then as_root pg_ctlcluster "$SLUICE_STARTED_PG" main stop || true; fi
}
set +euo pipefail
