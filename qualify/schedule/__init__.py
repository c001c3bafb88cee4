"""Handing a family x profile matrix to the scheduler a site already runs.

qualify schedules nothing itself: ``cells`` decides what each (family, profile) cell asks of
the scheduler (its cap, the allocation's memory, its GPUs, its time), ``slurm`` submits the
cells as a job array plus a merge job and reads Slurm's own verdicts back, ``kubernetes``
writes one Job manifest per cell, and ``record`` keeps what a submission decided.
"""
