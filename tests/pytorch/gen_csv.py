#!/usr/bin/env python3
"""gen_csv.py - write this folder's CSV fixtures with PyTorch's own schedules.

Builds each torch.distributed.pipelining schedule for rank 0 of a pipeline
of P ranks (no process group, no model: a stand-in stage object carries the
indices the schedule constructors read) and writes its compute-only order
with the schedule's own _dump_csv ("compute_only" where the class takes a
format). Every rank's list is computed by each rank alike, so rank 0's
object holds the whole order.

Schedule1F1B is a single-stage schedule without _dump_csv: its order comes
from its own _get_pipeline_order(), written with the same csv.writer call
_dump_csv makes, after dropping the gradient-reduction bookkeeping
(REDUCE_GRAD and its wait), which is not a compute action and which zb's
CSV reader refuses with the communication actions.

Usage: python3 tests/pytorch/gen_csv.py [OUTDIR]   (default: this folder)
Needs torch; run it in a virtual environment outside the repository.
"""
import csv
import os
import sys

import torch
from torch.distributed.pipelining import schedules as S

# (file stem, class, P ranks, chunks per rank, placement, microbatches)
CASES = [
    ("dualpipev", S.ScheduleDualPipeV, 2, 2, "v", [4]),
    ("dualpipev", S.ScheduleDualPipeV, 3, 2, "v", [6]),
    ("dualpipev", S.ScheduleDualPipeV, 4, 2, "v", [8, 10]),
    ("zbv", S.ScheduleZBVZeroBubble, 2, 2, "v", [3, 4]),
    ("zbv", S.ScheduleZBVZeroBubble, 4, 2, "v", [4, 5, 6, 7, 8]),
    ("izb", S.ScheduleInterleavedZeroBubble, 2, 2, "loop", [4, 6]),
    ("izb", S.ScheduleInterleavedZeroBubble, 4, 2, "loop", [8]),
    ("interleaved", S.ScheduleInterleaved1F1B, 2, 2, "loop", [4]),
    ("interleaved", S.ScheduleInterleaved1F1B, 4, 2, "loop", [8]),
    ("1f1b", S.Schedule1F1B, 2, 1, "loop", [4]),
    ("1f1b", S.Schedule1F1B, 4, 1, "loop", [8]),
]

COMPUTE = {
    S._ComputationType.FORWARD,
    S._ComputationType.BACKWARD_INPUT,
    S._ComputationType.BACKWARD_WEIGHT,
    S._ComputationType.FULL_BACKWARD,
    S._ComputationType.OVERLAP_F_B,
}


class StandIn:
    """What the schedule constructors read of a _PipelineStageBase."""

    def __init__(self, index, num_stages, group_size):
        self.stage_index = index
        self.num_stages = num_stages
        self.group_size = group_size
        self.group_rank = 0
        self.is_first = index == 0
        self.is_last = index == num_stages - 1
        self.submod = torch.nn.Identity()
        self.stage_index_to_group_rank = None


def rank0_stages(p, v, placement):
    n = p * v
    idx = [0, 2 * p - 1] if placement == "v" else [c * p for c in range(v)]
    return [StandIn(i, n, p) for i in idx[:v]]


def write(cls, p, v, placement, m, path):
    stages = rank0_stages(p, v, placement)
    if v == 1:
        order = cls(stages[0], m)._get_pipeline_order()
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            for r in order:
                w.writerow([a for a in order[r]
                            if a is None or a.computation_type in COMPUTE])
        return
    sched = cls(stages, m)
    if isinstance(sched, S._PipelineScheduleRuntime):
        sched._dump_csv(path, format="compute_only")
    else:
        sched._dump_csv(path)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for stem, cls, p, v, placement, ms in CASES:
        for m in ms:
            path = os.path.join(out, f"{stem}_p{p}_m{m}.csv")
            write(cls, p, v, placement, m, path)
            print(f"{path}: {cls.__name__} p {p} m {m}")
    print(f"torch {torch.__version__}")


if __name__ == "__main__":
    main()
