#!/usr/bin/env bash
# Assembles the images the local node runs, from binaries this project builds, as OCI image layout
# tarballs in OUTDIR (hack/local-node.sh import loads them into containerd; nothing is pulled):
#   pause.tar     localhost/nsclaim/pause:3.10              the Pod sandbox (hack/tools/imagebuild/pause)
#   manager.tar   $MANAGER_IMAGE (localhost/nsclaim/nsclaim-operator:dev)
#                 the manager built as the Dockerfile builds it (CGO_ENABLED=0 go build ./cmd), with
#                 the Dockerfile's ENTRYPOINT ["/manager"] and USER 65532:65532 and nothing else in it
#   manager-multiarch.tar $MANAGER_IMAGE as an OCI image index of linux/amd64 and linux/arm64 (the
#                 release's image, hack/release-dir.sh): the manager cross-compiled for each, each
#                 image as manager.tar's, joined by hack/tools/imagebuild/registry index
#   httpd.tar     localhost/nsclaim/httpd:dev               a tiny static HTTP server (workload)
#   pipeline.tar  localhost/nsclaim/pipeline:dev            test/node/pipeline: a CI job as a Pod
#   coredns.tar   localhost/nsclaim/coredns:<version>       bin/coredns-<version>/coredns
#   kubectl.tar   localhost/nsclaim/kubectl:v<KUBE_VERSION> bin/k8s/<version>-linux-amd64/kubectl
#   untar.tar     localhost/nsclaim/untar:dev               operator-sdk scorecard's init container
#   scorecard-test.tar localhost/nsclaim/scorecard-test:<OPERATOR_SDK_VERSION> (bin/scorecard-test-*)
#   catalog.tar   $CATALOG_IMAGE (localhost/nsclaim/catalog:dev)  opm serve of CATALOG_DIR (hack/catalog.sh)
#   bundle.tar    $BUNDLE_IMAGE (localhost/nsclaim/nsclaim-operator-bundle:dev)
#                 the operator bundle in BUNDLE_DIR (<repo>/bundle) as bundle.Dockerfile builds it:
#                 /manifests, /metadata, /tests/scorecard, labels from metadata/annotations.yaml
#   olm-tools.tar $OLM_TOOLS_IMAGE (localhost/nsclaim/olm-tools:dev)
#                 what quay.io/operator-framework/opm and OLM's util image give `operator-sdk run
#                 bundle` (its index image and decompression image: sh, cat, gzip, opm serve) and OLM's
#                 bundle unpack Job (cp, /bin/cpb, opm alpha bundle extract): opm and the C library it
#                 links, OLM's cpb (make cpb), Debian's static busybox (make busybox) for sh, cat,
#                 gzip and cp, an empty /configs with the file-based catalog label
#   olm.tar       $OLM_IMAGE (localhost/nsclaim/olm:dev)
#                 OLM's olm and catalog operators (make olm) as its quickstart Deployments run them
#                 (/bin/olm, /bin/catalog), with /bin/cpb and busybox's cp: also the unpack Job's util image
# Usage: hack/images.sh OUTDIR [IMAGE...]   (default: pause manager httpd pipeline coredns kubectl)
set -euo pipefail
out=${1:?usage: images.sh OUTDIR [IMAGE...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
KUBE_VERSION=${KUBE_VERSION:-1.37.1}
COREDNS_VERSION=$(awk '$1=="github.com/coredns/coredns"{print $2; exit}' "$here/tools/coredns/go.mod")
MANAGER_IMAGE=${MANAGER_IMAGE:-localhost/nsclaim/nsclaim-operator:dev}
CATALOG_IMAGE=${CATALOG_IMAGE:-localhost/nsclaim/catalog:dev}
BUNDLE_IMAGE=${BUNDLE_IMAGE:-localhost/nsclaim/nsclaim-operator-bundle:dev}
BUNDLE_DIR=${BUNDLE_DIR:-$root/bundle}
OLM_TOOLS_IMAGE=${OLM_TOOLS_IMAGE:-localhost/nsclaim/olm-tools:dev}
OLM_IMAGE=${OLM_IMAGE:-localhost/nsclaim/olm:dev}
BUSYBOX=${BUSYBOX:-$root/bin/busybox-1.35.0/busybox}
OLM_CPB=${OLM_CPB:-$root/bin/cpb}
OPERATOR_SDK_VERSION=${OPERATOR_SDK_VERSION:-v1.42.2}
images=("$@")
if ((${#images[@]} == 0)); then images=(pause manager httpd pipeline coredns kubectl); fi

gobuild() { # DIR OUT PKG
  (cd "$1" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags "-s -w" -o "$2" "$3")
}
CGO_ENABLED=0 go -C "$here/tools/imagebuild" build -o "$out/imagebuild" .
ib() { "$out/imagebuild" "$@"; }

for i in "${images[@]}"; do
  case $i in
  pause)
    gobuild "$here/tools/imagebuild" "$out/pause" ./pause
    ib -o "$out/pause.tar" -name localhost/nsclaim/pause:3.10 -entrypoint /pause -user 65535:65535 \
      -file /pause="$out/pause"
    ;;
  manager)
    # As the Dockerfile's builder stage: CGO_ENABLED=0 go build -o manager ./cmd (plus -trimpath).
    (cd "$root" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -o "$out/manager" ./cmd)
    ib -o "$out/manager.tar" -name "$MANAGER_IMAGE" -entrypoint /manager -user 65532:65532 \
      -file /manager="$out/manager"
    ;;
  manager-multiarch)
    CGO_ENABLED=0 go -C "$here/tools/imagebuild" build -o "$out/registry" ./registry
    parts=()
    for arch in ${MANAGER_ARCHS:-amd64 arm64}; do
      (cd "$root" && CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -o "$out/manager-$arch" ./cmd)
      ib -o "$out/manager-$arch.tar" -arch "$arch" -name "$MANAGER_IMAGE" -entrypoint /manager \
        -user 65532:65532 -file /manager="$out/manager-$arch"
      parts+=("$out/manager-$arch.tar")
    done
    "$out/registry" index "$out/manager-multiarch.tar" "$MANAGER_IMAGE" "${parts[@]}"
    ;;
  httpd)
    gobuild "$here/tools/imagebuild" "$out/httpd" ./httpd
    ib -o "$out/httpd.tar" -name localhost/nsclaim/httpd:dev -entrypoint /httpd -user 65532:65532 \
      -file /httpd="$out/httpd"
    ;;
  pipeline)
    gobuild "$root" "$out/pipeline" ./test/node/pipeline
    ib -o "$out/pipeline.tar" -name localhost/nsclaim/pipeline:dev -entrypoint /pipeline \
      -user 65532:65532 -file /pipeline="$out/pipeline"
    ;;
  coredns)
    ib -o "$out/coredns.tar" -name "localhost/nsclaim/coredns:$COREDNS_VERSION" -entrypoint /coredns \
      -user 65532:65532 -file /coredns="$root/bin/coredns-$COREDNS_VERSION/coredns"
    ;;
  kubectl)
    ib -o "$out/kubectl.tar" -name "localhost/nsclaim/kubectl:v$KUBE_VERSION" -entrypoint /kubectl \
      -user 65532:65532 -env KUBECACHEDIR=/tmp/kubecache -dir /tmp \
      -file /kubectl="$root/bin/k8s/$KUBE_VERSION-linux-amd64/kubectl"
    ;;
  untar)
    # operator-sdk scorecard's init container: `tar xvzf bundle.tar.gz -C DIR`.
    gobuild "$here/tools/imagebuild" "$out/untar" ./untar
    ib -o "$out/untar.tar" -name localhost/nsclaim/untar:dev -entrypoint /untar -user 65532:65532 \
      -file /untar="$out/untar"
    ;;
  scorecard-test)
    # operator-sdk's scorecard-test program (make scorecard-test), where the scorecard's test
    # configuration expects it: on PATH, reading the bundle from /bundle.
    ib -o "$out/scorecard-test.tar" -name "localhost/nsclaim/scorecard-test:$OPERATOR_SDK_VERSION" \
      -entrypoint /usr/local/bin/scorecard-test -user 65532:65532 -workdir / \
      -file /usr/local/bin/scorecard-test="$root/bin/scorecard-test-$OPERATOR_SDK_VERSION"
    ;;
  catalog)
    # opm serve of the file-based catalog in CATALOG_DIR (hack/catalog.sh). opm is built with cgo
    # (json1): the image carries the C library it is linked against, and nothing else.
    [[ -d ${CATALOG_DIR:-} ]] || { echo "images.sh: catalog needs CATALOG_DIR (hack/catalog.sh)" >&2; exit 2; }
    libs=()
    while read -r lib; do libs+=(-file "$lib=$(realpath "$lib"):0755"); done < <(ldd "$root/bin/opm" | grep -o '/[^ ]*')
    ib -o "$out/catalog.tar" -name "$CATALOG_IMAGE" -entrypoint /bin/opm \
      -arg serve -arg /configs -arg --port -arg 50051 -arg --pprof-addr -arg "" \
      -arg --termination-log -arg /dev/null -user 65532:65532 -dir /tmp \
      -file /bin/opm="$(realpath "$root/bin/opm")" "${libs[@]}" -tree /configs="$CATALOG_DIR"
    ;;
  bundle)
    [[ -f $BUNDLE_DIR/metadata/annotations.yaml ]] || { echo "images.sh: no bundle in BUNDLE_DIR=$BUNDLE_DIR" >&2; exit 2; }
    labels=()
    while read -r kv; do labels+=(-label "$kv"); done < <(
      awk '/^annotations:/{a=1; next} a && $1 ~ /:$/ && $1 !~ /^#/ {k=$1; sub(/:$/, "", k); print k "=" $2}' \
        "$BUNDLE_DIR/metadata/annotations.yaml")
    trees=(-tree "/manifests=$BUNDLE_DIR/manifests" -tree "/metadata=$BUNDLE_DIR/metadata")
    if [[ -d $BUNDLE_DIR/tests/scorecard ]]; then trees+=(-tree "/tests/scorecard=$BUNDLE_DIR/tests/scorecard"); fi
    ib -o "$out/bundle.tar" -name "$BUNDLE_IMAGE" "${labels[@]}" "${trees[@]}"
    ;;
  olm-tools)
    for f in "$BUSYBOX" "$OLM_CPB" "$root/bin/opm"; do
      [[ -x $f ]] || { echo "images.sh: olm-tools needs $f (make busybox cpb opm)" >&2; exit 2; }
    done
    libs=()
    while read -r lib; do libs+=(-file "$lib=$(realpath "$lib"):0755"); done < <(ldd "$root/bin/opm" | grep -o '/[^ ]*')
    links=()
    for a in sh cat gzip cp mkdir ls; do links+=(-link "/bin/$a=busybox"); done
    ib -o "$out/olm-tools.tar" -name "$OLM_TOOLS_IMAGE" -entrypoint /bin/opm -user 65532:65532 \
      -label operators.operatorframework.io.index.configs.v1=/configs -dir /configs -dir /tmp \
      -file /bin/busybox="$(realpath "$BUSYBOX")" -file /bin/cpb="$(realpath "$OLM_CPB")" \
      -file /bin/opm="$(realpath "$root/bin/opm")" "${libs[@]}" "${links[@]}"
    ;;
  olm)
    for f in "$BUSYBOX" "$OLM_CPB" "$root/bin/olm" "$root/bin/catalog"; do
      [[ -x $f ]] || { echo "images.sh: olm needs $f (make busybox cpb olm)" >&2; exit 2; }
    done
    ib -o "$out/olm.tar" -name "$OLM_IMAGE" -entrypoint /bin/olm -user 65532:65532 -dir /tmp \
      -file /bin/olm="$(realpath "$root/bin/olm")" -file /bin/catalog="$(realpath "$root/bin/catalog")" \
      -file /bin/cpb="$(realpath "$OLM_CPB")" -file /bin/busybox="$(realpath "$BUSYBOX")" -link /bin/cp=busybox
    ;;
  *)
    echo "images.sh: unknown image $i" >&2
    exit 2
    ;;
  esac
  echo "images.sh: $out/$i.tar" >&2
done
