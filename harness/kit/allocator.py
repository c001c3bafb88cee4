"""Pin glibc's mmap threshold, so that the memory of freed weights leaves the process.

glibc raises its mmap threshold (up to 32 MiB) each time a large mapped block is freed. After
the build frees its ~200 MB plan buffers, every weight tensor of the native runtime (at most
~13 MB each) comes from the heap instead of its own mapping, and freeing the runtime then
returns nothing to the kernel: at size ``small`` its ~400 MB stayed charged to the cgroup
through the whole reference phase. Setting the threshold explicitly turns the adjustment off
(mallopt(3), M_MMAP_THRESHOLD).
"""

from __future__ import annotations

import ctypes

M_MMAP_THRESHOLD = -3
DEFAULT_THRESHOLD_BYTES = 128 * 1024  # glibc's initial value


def pin_mmap_threshold(threshold_bytes: int = DEFAULT_THRESHOLD_BYTES) -> bool:
    """Fix the threshold; False where the C library is not glibc (nothing to pin there)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, threshold_bytes))
