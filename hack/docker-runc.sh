#!/bin/sh
# The OCI runtime of hack/docker.sh's dockerd: Debian's runc, after dropping from a bundle's
# config.json every capability that is not in this process's bounding set. Root on this machine lacks
# CAP_SYS_RESOURCE (docs/node.md), and dockerd 20.10 gives a --privileged container (every kind node)
# all capabilities the kernel knows, so runc would fail with "unable to apply caps: operation not
# permitted". Nothing else in the bundle is changed; a capability that cannot be held is never granted.
set -eu
# filter FILE PATH: drop the capabilities not held from the capability sets at PATH in FILE.
filter() {
  bnd=$(awk '/^CapBnd:/{print $2}' /proc/self/status)
  jq --arg bnd "$bnd" --argjson path "$2" '
    def held: ($bnd | ascii_downcase | explode | reverse | map(if . >= 97 then . - 87 else . - 48 end)) as $d
      | [range(0; ($d | length) * 4) as $i | select((($d[($i / 4) | floor] / pow(2; $i % 4)) | floor) % 2 == 1) | $i];
    (["CAP_CHOWN","CAP_DAC_OVERRIDE","CAP_DAC_READ_SEARCH","CAP_FOWNER","CAP_FSETID","CAP_KILL","CAP_SETGID",
      "CAP_SETUID","CAP_SETPCAP","CAP_LINUX_IMMUTABLE","CAP_NET_BIND_SERVICE","CAP_NET_BROADCAST","CAP_NET_ADMIN",
      "CAP_NET_RAW","CAP_IPC_LOCK","CAP_IPC_OWNER","CAP_SYS_MODULE","CAP_SYS_RAWIO","CAP_SYS_CHROOT","CAP_SYS_PTRACE",
      "CAP_SYS_PACCT","CAP_SYS_ADMIN","CAP_SYS_BOOT","CAP_SYS_NICE","CAP_SYS_RESOURCE","CAP_SYS_TIME",
      "CAP_SYS_TTY_CONFIG","CAP_MKNOD","CAP_LEASE","CAP_AUDIT_WRITE","CAP_AUDIT_CONTROL","CAP_SETFCAP",
      "CAP_MAC_OVERRIDE","CAP_MAC_ADMIN","CAP_SYSLOG","CAP_WAKE_ALARM","CAP_BLOCK_SUSPEND","CAP_AUDIT_READ",
      "CAP_PERFMON","CAP_BPF","CAP_CHECKPOINT_RESTORE"]) as $names
    | ([held[] | $names[.] // empty]) as $ok
    | if getpath($path) then setpath($path; getpath($path) | map_values(map(select(. as $c | $ok | index($c))))) else . end
  ' "$1" >"$1.caps"
  mv "$1.caps" "$1"
}
bundle=""
process=""
prev=""
for a in "$@"; do
  case $prev in --bundle | -b) bundle=$a ;; --process | -p) process=$a ;; esac
  case $a in --bundle=*) bundle=${a#--bundle=} ;; --process=*) process=${a#--process=} ;; esac
  prev=$a
done
# create/run: the bundle's config.json; exec: the process file.
if [ -n "$bundle" ] && [ -f "$bundle/config.json" ]; then filter "$bundle/config.json" '["process","capabilities"]'; fi
if [ -n "$process" ] && [ -f "$process" ]; then filter "$process" '["capabilities"]'; fi
exec runc "$@"
