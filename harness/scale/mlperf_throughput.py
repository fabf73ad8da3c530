"""Training throughput of MLPerf Training results, to validate the projection on real systems.

From a submitter folder (``systems/<system>.json``, ``results/<system>/<benchmark>/result_*.txt``):
per system, the accelerator count (``number_of_nodes x accelerators_per_node``), the global batch
and the samples/s of each run, taken as ``train_samples`` over the median epoch window
(``epoch_stop - epoch_start``; the first epoch, which carries warm-up and compilation, left out).
``validate_pair`` projects the larger size of one system from its smaller size with
``scale_model`` and reports the error. Files are read with a size cap, result files with the
hardened MLLOG reader (trainmark.format.mllog_read), system descriptions as JSON only.
"""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from trainmark.format import layout, mllog
from trainmark.format.mllog_read import read_records
from trainmark.harness.scale import projection as scale_model

FILE_CAP = 64 << 20   # an MLPerf result file is a few MB at most


@dataclass(frozen=True)
class SystemThroughput:
    system: str
    benchmark: str
    accelerator: str
    accelerators: int
    global_batch: int
    samples_per_s: list[float]      # one per run

    @property
    def median(self) -> float:
        return statistics.median(self.samples_per_s)


def _read_bytes(path: Path) -> bytes:
    with open(path, "rb") as fh:
        raw = fh.read(FILE_CAP + 1)
    if len(raw) > FILE_CAP:
        raise ValueError(f"{path}: larger than {FILE_CAP} bytes")
    return raw


def _read(path: Path) -> str:
    return _read_bytes(path).decode("latin-1")


def run_throughput(path: Path) -> tuple[int, float]:
    """(global batch, samples/s) of one MLPerf result file (read with the hardened MLLOG reader)."""
    batch = samples = None
    starts: dict[int, float] = {}
    windows: dict[int, float] = {}
    for e in read_records(_read_bytes(path), strict=False):
        key, meta = e.key, e.metadata
        if key == "global_batch_size":
            batch = int(e.value)
        elif key == mllog.TRAIN_SAMPLES:
            samples = int(e.value)
        elif key in (mllog.EPOCH_START, mllog.EPOCH_STOP) and isinstance(meta.get(mllog.EPOCH_NUM), int):
            if key == mllog.EPOCH_START:
                starts[meta[mllog.EPOCH_NUM]] = e.time_ms
            elif meta[mllog.EPOCH_NUM] in starts:
                windows[meta[mllog.EPOCH_NUM]] = (e.time_ms - starts[meta[mllog.EPOCH_NUM]]) / 1000
    steady = [s for k, s in sorted(windows.items()) if k > min(windows, default=0) and s > 0]
    if batch is None or samples is None or not steady:
        raise ValueError(f"{path}: needs global_batch_size, train_samples and at least two epoch windows")
    return batch, samples / statistics.median(steady)


def system_throughput(submitter_dir: Path, system: str, benchmark: str) -> SystemThroughput:
    desc = json.loads(_read(Path(submitter_dir) / layout.SYSTEMS_DIR / layout.system_file(system)))
    accelerators = int(desc["number_of_nodes"]) * int(desc["accelerators_per_node"])
    runs = sorted((Path(submitter_dir) / layout.RESULTS_DIR / system / benchmark).glob(layout.RESULT_GLOB))
    if not runs:
        raise ValueError(f"{submitter_dir}: no {layout.RESULTS_DIR}/{system}/{benchmark}/{layout.RESULT_GLOB}")
    measured = [run_throughput(p) for p in runs]
    batches = {b for b, _ in measured}
    if len(batches) != 1:
        raise ValueError(f"{system}/{benchmark}: runs with different global batches {sorted(batches)}")
    return SystemThroughput(system, benchmark, str(desc.get("accelerator_model_name", "")), accelerators,
                            batches.pop(), [x for _, x in measured])


def validate_pair(small: SystemThroughput, large: SystemThroughput, link: scale_model.Link,
                  gradient_bytes: int, overlap: float = 0.0) -> dict:
    """Project ``large`` from ``small`` (the same node type at two sizes); returns the prediction and its error.

    The small system's step is split with the model itself: compute = step - exposed all-reduce;
    compute then scales with the local batch of the large system.
    """
    if small.accelerator != large.accelerator:
        raise ValueError(f"different accelerators ({small.accelerator} vs {large.accelerator}): not one system "
                         "at two sizes")
    if small.accelerators == large.accelerators:
        raise ValueError(f"both systems have {small.accelerators} accelerators: not one system at two sizes")
    n1, n2 = small.accelerators, large.accelerators
    b1, b2 = small.global_batch / n1, large.global_batch / n2
    step1 = small.global_batch / small.median
    comm1 = scale_model.allreduce_seconds(n1, gradient_bytes, link)
    # solve step1 = c + max(0, comm1 - overlap c) for the compute c
    compute1 = step1 if comm1 <= overlap * step1 else (step1 - comm1) / (1 - overlap)
    if compute1 <= 0:
        raise ValueError("the link model alone is slower than the measured step: check bandwidth and latency")
    profile = scale_model.ComputeProfile(compute1, int(round(b1)), gradient_bytes, overlap)
    step2 = scale_model.step_seconds(n2, b2, profile, link)[0]
    predicted = large.global_batch / step2
    return {"small": small.system, "large": large.system, "accelerators": [n1, n2],
            "measured_samples_per_s": large.median, "predicted_samples_per_s": predicted,
            "error": predicted / large.median - 1, "link": scale_model.link_dict(link),
            "gradient_bytes": gradient_bytes, "overlap": overlap}
