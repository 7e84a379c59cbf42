#!/usr/bin/env bash
# Make sure the PostgreSQL and Redis that the tests use are up on 127.0.0.1 (start them, or
# install them with apt on a machine that lacks them), and that Chromium and ChromeDriver are
# installed for the panel's browser test. Idempotent; prints what it did.
set -euo pipefail

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

install_packages() {
  echo "services: installing $* with apt"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "$@" >/dev/null
}

if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  install_packages postgresql postgresql-contrib
fi
if ! pg_up; then
  echo "services: starting PostgreSQL"
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  hba=/etc/postgresql/$version/main/pg_hba.conf
  if ! grep -q '^host all all 127.0.0.1/32 trust' "$hba"; then
    sed -i '1i host all all 127.0.0.1/32 trust' "$hba"
  fi
  pg_ctlcluster --skip-systemctl-redirect "$version" main start
  for _ in $(seq 1 30); do pg_up && break; sleep 1; done
fi
pg_up || { echo "services: PostgreSQL did not come up on 127.0.0.1:5432" >&2; exit 1; }

if ! command -v redis-server >/dev/null 2>&1; then
  install_packages redis-server
fi
if ! redis_up; then
  echo "services: starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
  for _ in $(seq 1 30); do redis_up && break; sleep 0.5; done
fi
redis_up || { echo "services: Redis did not come up on 127.0.0.1:6379" >&2; exit 1; }

# The web panel's browser test drives Debian's Chromium with its ChromeDriver (never a download);
# a CJK font makes its Chinese screenshots readable.
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1 \
    || ! fc-list 2>/dev/null | grep -qi "wqy\|noto sans cjk"; then
  install_packages chromium chromium-driver fonts-wqy-microhei
fi
# promtool checks the /metrics output, the alert rules and the Prometheus configuration in the tests
# (tests/unit/test_monitoring.py, tests/e2e/test_operations.py; skipped without it). Only the one program
# is taken from Debian's prometheus package: installing the package would start a Prometheus server.
# MNEMO_PROMTOOL=0 skips it (the monitoring tests then fail); an install that fails stops here.
install_promtool() {
  local tmp
  tmp=$(mktemp -d)
  chmod 755 "$tmp"  # apt's download user must be able to write there
  (cd "$tmp" && { apt-get download -qq prometheus 2>/dev/null \
                  || { apt-get update -qq && apt-get download -qq prometheus; }; }) \
    && dpkg-deb --fsys-tarfile "$tmp"/prometheus_*.deb | tar -x -C "$tmp" ./usr/bin/promtool \
    && install -m 0755 "$tmp/usr/bin/promtool" /usr/local/bin/promtool
  local status=$?
  rm -rf "$tmp"
  return $status
}
if [ "${MNEMO_PROMTOOL:-1}" != 0 ] && ! command -v promtool >/dev/null 2>&1; then
  echo "services: installing promtool (from Debian's prometheus package)"
  install_promtool || { echo "services: promtool could not be installed; the tests need it" >&2; exit 1; }
fi
echo "services: PostgreSQL and Redis are up; Chromium $(chromium --version 2>/dev/null | awk '{print $2}')"
