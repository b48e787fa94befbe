"""Freed memory kept for reuse: a block freed and asked for again is not faulted in again."""
import subprocess
import sys

import pytest

from inductionlab.heap import keep_freed_memory

# In a fresh process (the thresholds are per process): minor page faults while four 4 MB
# blocks are allocated, written and freed 50 times, as a step's tensors are, after a first
# round that maps them. By default glibc serves the first round with mappings, then moves
# such blocks to the heap but trims its top whenever more than twice their size is free.
FAULTS = """
import resource, sys
import numpy as np
if sys.argv[1] == "keep":
    from inductionlab.heap import keep_freed_memory
    assert keep_freed_memory()
def churn():
    blocks = [np.empty(1 << 20, dtype=np.float32) for _ in range(4)]
    for b in blocks:
        b[:] = 1.0
churn()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(50):
    churn()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", FAULTS, mode], capture_output=True, text=True,
                          check=True)
    return int(done.stdout.strip())


@pytest.mark.skipif(not keep_freed_memory(), reason="no glibc mallopt here")
def test_a_freed_block_is_reused_instead_of_faulted_in_again():
    default, kept = _faults("default"), _faults("keep")
    assert default > 50 * 1000  # most of a round's 4,096 pages are faulted in afresh
    assert kept < 50 * 10       # the blocks stay mapped: almost no fault after the first round
