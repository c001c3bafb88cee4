"""The cgroup backend: a fresh memory (and pids) cgroup nested under qualify's own, v1 or v2."""
