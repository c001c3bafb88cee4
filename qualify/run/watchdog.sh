# The run's watchdog: kills the E2E when qualify dies.
#
# Run as `sh watchdog.sh CGROUP_DIR...` by qualify, outside the run's cgroups, its standard
# input the read end of a pipe whose write end only qualify holds. Reading it returns
# end-of-file when qualify closes it (the run is over) or when the kernel closes it because
# qualify died, SIGKILL included; then every process left in the run's cgroups is killed
# (cgroup.kill where the kernel has it, a SIGKILL loop in any case), and the cgroups are
# removed: qualify does that itself, but when it exits while the kernel is still tearing
# thousands of killed processes down (a fork storm), the watchdog finishes the job.
# A POSIX shell: it starts in about a millisecond and sits in one blocking read the whole run.

trap '' INT  # a Ctrl-C to qualify's process group is qualify's, not the watchdog's

while read -r _; do :; done

# Kill until the cgroups are empty, for 10 s at most.
tries=0
while [ "$tries" -lt 1000 ]; do
    pids=
    for dir do
        if [ -r "$dir/cgroup.procs" ]; then
            while read -r pid; do pids="$pids $pid"; done < "$dir/cgroup.procs"
        fi
    done
    [ -n "$pids" ] || break
    for dir do
        [ -e "$dir/cgroup.kill" ] && echo 1 > "$dir/cgroup.kill"
    done 2>/dev/null
    # shellcheck disable=SC2086  # one word per pid
    kill -9 $pids 2>/dev/null
    sleep 0.01
    tries=$((tries + 1))
done

# Remove them, retrying while the kernel still counts exiting tasks (EBUSY), for 10 s at most.
tries=0
while [ "$tries" -lt 500 ]; do
    left=
    for dir do
        if [ -d "$dir" ] && ! rmdir "$dir" 2>/dev/null; then
            left=1
        fi
    done
    [ -n "$left" ] || break
    sleep 0.02
    tries=$((tries + 1))
done
