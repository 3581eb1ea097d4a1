#!/usr/bin/env bash
# Installs what tether needs from the system: Debian's squid (the forward proxy in `tether up` and
# the tests), buildah and strip (binutils) for the tether container image (`npm run image`, no daemon) and
# checks for Go (builds etcd / kube-apiserver / kube-controller-manager on first use).
# Node and the npm packages come from `npm ci` (the project brings Node 24 LTS as a package).
set -euo pipefail
if ! command -v go >/dev/null 2>&1 && [ ! -x /usr/local/go/bin/go ]; then
  echo "tether needs Go >= 1.26 to build the Kubernetes binaries (or KUBEBUILDER_ASSETS pointing at them)." >&2
  exit 1
fi
need=()
command -v squid >/dev/null 2>&1 || [ -x /usr/sbin/squid ] || need+=(squid)
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
command -v buildah >/dev/null 2>&1 || need+=(buildah)
command -v strip >/dev/null 2>&1 || need+=(binutils)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing Debian packages: ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
