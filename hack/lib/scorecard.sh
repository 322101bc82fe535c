# operator-sdk scorecard as operator-sdk runs it: each of the bundle's tests a Pod (images assembled by
# hack/images.sh, tag names as in bundle/tests/scorecard/config.yaml but under localhost/nsclaim, already
# on the node), the bundle untarred by an init container. Sourced by hack/test-node.sh (the local node)
# and hack/test-e2e-node.sh (kind).
#
#   scorecard_pods KUBECONFIG DIR    namespace scorecard; the results in DIR/scorecard.json; prints one
#                                    line `scorecard: name=state ...`; returns 1 unless every result passes
# Needs REPO_ROOT, KUBECTL, OPERATOR_SDK.
scorecard_pods() {
  local kubeconfig=$1 dir=$2 sc=0
  sed 's|image: quay.io/operator-framework/scorecard-test:|image: localhost/nsclaim/scorecard-test:|' \
    "$REPO_ROOT/bundle/tests/scorecard/config.yaml" >"$dir/scorecard-config.yaml"
  "$KUBECTL" --kubeconfig "$kubeconfig" create namespace scorecard >/dev/null
  "$OPERATOR_SDK" scorecard "$REPO_ROOT/bundle" --config "$dir/scorecard-config.yaml" \
    --kubeconfig "$kubeconfig" --namespace scorecard --service-account default \
    --untar-image localhost/nsclaim/untar:dev --wait-time 180s --output json \
    >"$dir/scorecard.json" 2>"$dir/scorecard.err" || sc=$?
  if ((sc == 0)) && jq -e '[.items[].status.results[].state] | length > 0 and all(. == "pass")' \
    "$dir/scorecard.json" >/dev/null; then
    echo "scorecard: $(jq -r '[.items[].status.results[] | "\(.name)=\(.state)"] | join(" ")' "$dir/scorecard.json")" >&2
    return 0
  fi
  echo "--- FAIL: scorecard Pods (exit $sc)" >&2
  cat "$dir/scorecard.err" >&2
  jq -r '.items[].status.results[] | "\(.name) \(.state) \(.errors // [])"' "$dir/scorecard.json" >&2 || true
  return 1
}
