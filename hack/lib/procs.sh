# shellcheck shell=bash
# Process helpers shared by hack/local-cluster.sh and hack/local-node.sh. The caller sets PIDS (the
# directory of NAME.pid files) and STATE (its state directory, which every process it starts names
# on its command line), so a recycled PID or another cluster's process is never signalled.

# pid_of NAME: print the PID recorded for NAME (nothing if there is no pid file).
pid_of() {
  local f=$PIDS/$1.pid
  if [[ -s $f ]]; then tr -dc '0-9' <"$f"; fi
}

# alive PID: the process exists and is not a zombie.
alive() {
  local pid=$1 state
  [[ -n $pid && -r /proc/$pid/stat ]] || return 1
  state=$(sed -E 's/^.*\) ([A-Za-z]).*$/\1/' "/proc/$pid/stat" 2>/dev/null) || return 1
  [[ -n $state && $state != Z ]]
}

# ours NAME PID: PID runs the binary NAME (argv[0] ends in /NAME) and its command line names this state
# directory, so a recycled PID or another cluster's process is never touched.
ours() {
  local name=$1 pid=$2 args=()
  mapfile -d '' -t args 2>/dev/null <"/proc/$pid/cmdline" || return 1
  ((${#args[@]} > 0)) || return 1
  [[ ${args[0]##*/} == "$name" ]] || return 1
  [[ "${args[*]}" == *"$STATE/"* ]]
}

# running NAME: NAME's recorded PID is alive and ours.
running() {
  local pid
  pid=$(pid_of "$1")
  [[ -n $pid ]] && alive "$pid" && ours "$1" "$pid"
}
