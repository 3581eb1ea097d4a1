#!/usr/bin/env bash
# Installs what tether needs from the system: Debian's squid (the forward proxy in `tether up` and
# the tests), buildah and strip (binutils) for the tether container image (`npm run image`, no daemon),
# what real nodes need (below; the image tests use its iproute2 too), headless Chromium for the
# console's browser tests, and checks for Go (builds etcd /
# kube-apiserver / kube-controller-manager on first use).
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
# real nodes (src/localenv/node.ts): containerd + runc, the CNI plugins, iptables/conntrack for
# kube-proxy, umoci to pack the pause and test images
[ -x /usr/bin/containerd ] || need+=(containerd)
[ -x /usr/sbin/runc ] || [ -x /usr/bin/runc ] || need+=(runc)
[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
[ -x /usr/sbin/iptables ] || need+=(iptables)
[ -x /usr/sbin/conntrack ] || need+=(conntrack)
[ -x /usr/bin/umoci ] || need+=(umoci)
[ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || need+=(iproute2)
# the console's browser tests (test/e2e/console-browser.test.ts): Debian's headless Chromium
[ -x /usr/bin/chromium-headless-shell ] || need+=(chromium-headless-shell)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing Debian packages: ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
