#!/bin/sh
# A stand-in for kubectl-nsclaim in the Action's unit tests: it records its arguments (after the value
# of NSCLAIM_JOB_INSTANCE) in $FAKE_LOG, writes --write-kubeconfig's file, and answers "claim" with a
# claim named after the argument after "--" (else the job's derived name). Shell builtins only.
printf '%s\n' "${NSCLAIM_JOB_INSTANCE:-} $*" >> "$FAKE_LOG"
name="gh-$GITHUB_RUN_ID-$GITHUB_RUN_ATTEMPT-$GITHUB_JOB${NSCLAIM_JOB_INSTANCE:+-$NSCLAIM_JOB_INSTANCE}"
prev=""
for a in "$@"; do
  [ "$prev" = "--write-kubeconfig" ] && printf 'apiVersion: v1\nkind: Config\n' > "$a"
  [ "$prev" = "--" ] && name=$a
  prev=$a
done
case " $* " in
  *" release "*) echo "namespaceclaim $name deleted" >&2; exit 0 ;;
esac
printf '{"metadata":{"name":"%s"},"status":{"namespace":"ns-%s","className":"ci"}}\n' "$name" "$name"
