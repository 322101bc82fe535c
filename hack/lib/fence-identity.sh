# shellcheck shell=bash
# check_fence_identity FENCE BUNDLE_DIR...: fails unless the username regex of the admission fence FENCE
# (the YAML of config/fence, built; the fence matches the regex, the label guard its negation) matches
# the ServiceAccount that every CSV of the bundles BUNDLE_DIR/manifests runs the operator under, in any
# install namespace, and nothing else. Shared by hack/test-olm.sh and hack/lib/node-olm.sh (test-kind-olm,
# test-node-olm, the release rehearsal), which check every fence they apply.
check_fence_identity() {
  local fence=$1 regex sa csv dir ns
  shift
  regex=$(sed -n "s/.*request\.userInfo\.username\.matches('\([^']*\)').*/\1/p" <<<"$fence" | sort -u)
  if [ -z "$regex" ] || [ "$(wc -l <<<"$regex")" -ne 1 ]; then
    echo "the fence and the label guard must match one username regex, found: $regex" >&2
    return 1
  fi
  for dir in "$@"; do
    for csv in "$dir"/manifests/*.clusterserviceversion.yaml; do
      [ -f "$csv" ] || continue
      for sa in $(sed -n 's/^ *serviceAccountName: *//p' "$csv" | sort -u); do
        for ns in operators openshift-operators nsclaim-operator-system; do
          grep -Eq "$regex" <<<"system:serviceaccount:$ns:$sa" || {
            echo "the fence's username regex $regex does not match system:serviceaccount:$ns:$sa, which $csv runs the operator as" >&2
            return 1
          }
        done
        if grep -Eq "$regex" <<<"system:serviceaccount:operators:$sa-other"; then
          echo "the fence's username regex $regex matches more than $sa" >&2
          return 1
        fi
      done
    done
  done
}
