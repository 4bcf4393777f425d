"""Independent training runs in worker processes.

Every training run of the experiments (a stage-1 decoder, a stage-2/3 model, the knockout
decoder) is a top-level function of plain settings that seeds its data, initialisation and
position offsets itself and pins torch to one thread, so its result does not depend on the
process it runs in. :func:`run_in_workers` runs a list of such ``(function, *args)`` jobs
in ``workers`` spawned processes (or in this one when ``workers == 1``), in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Job = tuple  # (function, *args)


def run_job(job: Job) -> Any:
    """Run one ``(function, *args)`` job."""
    fn, *args = job
    return fn(*args)


def run_in_workers(jobs: Sequence[Job], workers: int, desc: str = "runs") -> list[Any]:
    """Results of ``jobs`` in order, computed in up to ``workers`` spawned processes.

    Args:
        jobs: ``(function, *args)`` tuples; the function must be importable (top level).
        workers: Processes (1: run here, one after the other).
        desc: Label of the progress line.

    Examples
    --------
    >>> run_in_workers([(pow, 2, 3), (pow, 3, 2)], workers=1)
    [8, 9]
    """
    from icml26_shared.progress import progress

    jobs = list(jobs)
    if workers > 1 and len(jobs) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(min(workers, len(jobs)), mp_context=ctx) as pool:
            return list(progress(pool.map(run_job, jobs), desc=desc, total=len(jobs)))
    return [run_job(j) for j in progress(jobs, desc=desc, total=len(jobs))]
